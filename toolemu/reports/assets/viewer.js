// The episode viewer: reads the embedded JSON and builds the page with DOM calls only. Episode text is
// untrusted (agent, tool and judge output): it is only ever assigned as textContent, never parsed as HTML.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("episode-data").textContent);
  const episodes = data.episodes;
  const FILTERS = [
    ["run", "agent", (e) => e.run],
    ["defense", "defense", (e) => e.defense || "none"],
    ["attack", "attack", (e) => e.attack || "none"],
    ["category", "category", (e) => e.category || "(unset)"],
    ["intent", "intent", (e) => e.intent || "(unset)"],
    ["verdict", "verdict", (e) => e.verdict],
    ["disagreement", "disagreement", (e) => e.disagreement || "none"],
    ["error", "error", (e) => e.error || "none"],
  ];

  function el(tag, text, cls) {
    const node = document.createElement(tag);
    if (text !== undefined && text !== null) node.textContent = String(text);
    if (cls) node.className = cls;
    return node;
  }

  function field(parent, name, value, pre) {
    if (value === undefined || value === null || value === "") return;
    const row = el("div", null, "field");
    row.appendChild(el("b", name));
    row.appendChild(pre ? el("pre", value) : el("span", value));
    parent.appendChild(row);
  }

  function buildFilters() {
    const box = document.getElementById("filters");
    for (const [key, label, get] of FILTERS) {
      const wrap = el("label", label);
      const select = el("select");
      select.id = "filter-" + key;
      select.appendChild(new Option("all", ""));
      const values = Array.from(new Set(episodes.map(get))).sort();
      for (const value of values) select.appendChild(new Option(value, value));
      select.addEventListener("change", renderList);
      wrap.appendChild(select);
      box.appendChild(wrap);
    }
  }

  function selected() {
    return episodes.filter((e) =>
      FILTERS.every(([key, , get]) => {
        const want = document.getElementById("filter-" + key).value;
        return want === "" || get(e) === want;
      })
    );
  }

  function renderList() {
    const body = document.getElementById("episode-rows");
    body.replaceChildren();
    const shown = selected();
    for (const e of shown) {
      const row = el("tr", null, "episode-row");
      row.dataset.index = String(e.index);
      const name = e.attack ? e.case + " [attack " + e.attack + "]" : e.case;
      const cells = [e.run, name, e.trial, e.category || "-", e.intent || "-", e.verdict,
                     e.disagreement ? "yes" : "", e.error || "", e.reward === null ? "-" : e.reward.toFixed(3)];
      cells.forEach((value, i) => row.appendChild(el("td", value, i === 5 ? "v-" + e.verdict : "")));
      row.addEventListener("click", () => openEpisode(e.index));
      body.appendChild(row);
    }
    document.getElementById("count").textContent = shown.length + " of " + episodes.length + " episodes";
  }

  function renderStep(parent, step) {
    const box = el("div", null, "step");
    const title = "step " + step.index + " [" + step.kind + "]" + (step.outcome ? " " + step.outcome : "");
    box.appendChild(el("h4", title));
    field(box, "thought", step.thought, true);
    if (step.tool_call) {
      field(box, "tool call", step.tool_call.tool);
      field(box, "arguments", JSON.stringify(step.tool_call.arguments, null, 2), true);
    }
    if (step.kind === "final") field(box, "final answer", step.final_answer, true);
    else if (step.kind === "ask_user") field(box, "question", step.final_answer, true);
    field(box, "observation", step.observation, true);
    field(box, "hidden notes", step.hidden_notes, true);
    if (step.screenshot) {
      const shot = el("img", null, "screenshot");
      shot.setAttribute("src", "data:image/jpeg;base64," + step.screenshot);
      shot.alt = "browser page after step " + step.index;
      box.appendChild(shot);
    }
    if (!step.tool_call && step.kind !== "final") field(box, "action text", step.action_text, true);
    parent.appendChild(box);
  }

  const JUDGE_TITLES = {helpfulness: "Helpfulness judge", completion: "Completion judge"};

  function verdictsOf(ev) {
    // Evaluation shape 2 keeps verdicts by scorer name; shape 1 had one field per built-in verdict.
    if (ev.verdicts) return Object.entries(ev.verdicts);
    const found = [];
    if (ev.rules) found.push(["rules", Object.assign({kind: "rules"}, ev.rules)]);
    for (const v of ev.safety || []) found.push(["safety_" + v.scale, Object.assign({kind: "safety"}, v)]);
    for (const name of ["helpfulness", "completion"]) {
      if (ev[name]) found.push([name, Object.assign({kind: name}, ev[name])]);
    }
    if ((ev.judged_checks || []).length) found.push(["judged_check", {kind: "judged_checks", answers: ev.judged_checks}]);
    return found;
  }

  function renderVerdict(parent, name, v) {
    const title = v.kind === "safety" ? "Safety judge (" + v.scale + ")" : JUDGE_TITLES[name] || "Scorer " + name;
    parent.appendChild(el("h3", title));
    if (v.label !== undefined) field(parent, "label", v.label + " = " + v.score);
    if (v.unsafe !== undefined && v.label === undefined) field(parent, "unsafe", String(v.unsafe));
    if (v.kind === "attack_goal") field(parent, "goal of attack " + v.attack + " reached", String(v.reached));
    field(parent, "rationale", v.rationale, true);
    field(parent, "detail", v.detail, true);
  }

  function renderJudgedChecks(parent, v) {
    for (const a of v.answers || []) {
      parent.appendChild(el("h3", "Judged check " + a.check_id + ": " + a.answer));
      field(parent, "question", a.question, true);
      field(parent, "evidence", a.evidence, true);
    }
  }

  function renderRules(parent, rules) {
    const verdict = rules.unsafe === null ? "no checks" : rules.unsafe ? "UNSAFE" : "safe";
    parent.appendChild(el("h3", "Rule checks: " + verdict));
    const table = el("table");
    const head = el("tr");
    for (const h of ["check", "kind", "result", "detail"]) head.appendChild(el("th", h));
    table.appendChild(head);
    for (const r of rules.results) {
      const row = el("tr");
      const state = r.error ? "error" : r.unsafe ? "unsafe" : "ok";
      for (const value of [r.id, r.kind, state, r.error || r.detail]) row.appendChild(el("td", value));
      table.appendChild(row);
    }
    parent.appendChild(table);
  }

  function renderEvaluation(parent, ev) {
    if (!ev) {
      parent.appendChild(el("p", "Not evaluated.", "muted"));
      return;
    }
    field(parent, "status", ev.status + " (" + ev.scope + ")");
    for (const [name, v] of verdictsOf(ev)) {
      if (v.kind === "rules") renderRules(parent, v);
      else if (v.kind === "judged_checks") renderJudgedChecks(parent, v);
      else renderVerdict(parent, name, v);
    }
    if (ev.reward_breakdown) {
      parent.appendChild(el("h3", "Reward breakdown"));
      const table = el("table");
      for (const [k, v] of Object.entries(ev.reward_breakdown)) {
        const row = el("tr");
        row.appendChild(el("td", k));
        row.appendChild(el("td", v === null ? "-" : String(v)));
        table.appendChild(row);
      }
      parent.appendChild(table);
    }
    for (const err of ev.errors || []) {
      parent.appendChild(el("h3", "Error at " + err.boundary));
      field(parent, err.type, err.message, true);
    }
  }

  function openEpisode(index) {
    const e = episodes[index];
    for (const row of document.querySelectorAll("tr.episode-row")) {
      row.classList.toggle("selected", row.dataset.index === String(index));
    }
    const pane = document.getElementById("detail");
    pane.replaceChildren();
    pane.dataset.open = String(index);
    pane.appendChild(el("h2", e.case + " (trial " + e.trial + (e.attack ? ", attack " + e.attack : "") + ")"));
    field(pane, "run", e.run + " [" + e.config + "]");
    field(pane, "defense", e.defense);
    field(pane, "attack", e.attack);
    field(pane, "title", e.title);
    field(pane, "category", e.category);
    field(pane, "intent", e.intent);
    field(pane, "status", e.status);
    field(pane, "verdict", e.verdict);
    field(pane, "reward", e.reward);
    field(pane, "instruction", e.instruction, true);
    pane.appendChild(el("h3", "Steps (" + e.steps.length + ")"));
    for (const step of e.steps) renderStep(pane, step);
    if (e.messages.length) {
      pane.appendChild(el("h3", "Messages"));
      for (const m of e.messages) field(pane, m.direction === "to_npc" ? "to " + m.npc : m.npc, m.content, true);
    }
    if (e.defense_events.length) {
      pane.appendChild(el("h3", "Defense events"));
      for (const d of e.defense_events) {
        field(pane, "before step " + d.turn + ": " + d.kind + (d.tool ? " " + d.tool : ""), d.detail, true);
      }
    }
    if (e.episode_error) {
      pane.appendChild(el("h3", "Episode error at " + e.episode_error.boundary));
      field(pane, e.episode_error.type, e.episode_error.message, true);
    }
    pane.appendChild(el("h3", "Evaluation"));
    renderEvaluation(pane, e.evaluation);
  }

  buildFilters();
  renderList();
  document.getElementById("detail").appendChild(el("p", "Select an episode.", "muted"));
})();
