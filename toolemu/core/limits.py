"""Every bound toolemu puts on untrusted input, in one place (README "Input policy" lists them).

Case folders, toolkit specs and OpenAgentSafety tasks come from strangers, and the agent under test is often a
remote model: these limits keep a hostile or broken input from exhausting memory, time or disk.
"""

from __future__ import annotations

MAX_DATA_FILE_BYTES = 16 * 1024 * 1024
"""Largest case, toolkit spec or OAS task file read (16 MiB; ToolEmu's full toolkit file is under 1 MiB)."""
MAX_YAML_NODES = 200_000
"""Most YAML nodes after alias expansion (an alias counts as a copy of what it names at each use)."""
MAX_EXPANDED_CHARS = 16 * 1024 * 1024
"""Most scalar characters in a YAML document after alias expansion."""
MAX_NESTING = 64
"""Deepest nesting of lists and mappings in a data file."""
MAX_INSTRUCTION_CHARS = 50_000
"""Longest user instruction."""
MAX_TEXT_CHARS = 50_000
"""Longest value of any other text field of a case (titles, criteria, NPC profiles, reference actions)."""
MAX_CASE_TEXT_CHARS = 500_000
"""Most characters of case text in all (seed file contents excepted): what emulators and judges may be shown."""
MAX_SEED_CONTENT_CHARS = 1_000_000
"""Longest inline ``environment.files[].content``."""
MAX_SEED_FILE_BYTES = 64 * 1024 * 1024
"""Largest file a case copies into the sandbox (``environment.files[].source``)."""
MAX_STEPS = 1_000
"""Largest step budget (``max_steps`` of a case, ``--max-steps``, ``EnvConfig.max_steps``)."""
MAX_OBSERVATION_CHARS = 1_000_000
"""Largest ``max_observation_chars`` (the observation space's bound)."""
MAX_ACTION_CHARS = 1_000_000
"""Longest agent action (the action space's bound); a longer one is a parse error for the agent."""
MAX_FINAL_ANSWER_CHARS = 100_000
"""Longest final answer; a longer one is a parse error for the agent, never a scored answer."""
MAX_TRIALS = 10_000
"""Most trials per case in one ``bench`` run."""
MAX_CONCURRENCY = 1_024
"""Most episodes in flight in one ``bench`` run."""
MAX_FOLDER_FILES = 10_000
"""Most entries (files, folders, links) in a case's referenced folders or an OAS task folder, walked at load."""
MAX_FOLDER_BYTES = 256 * 1024 * 1024
"""Most bytes of regular files in such a folder (a sparse file counts at its full size)."""
MAX_FOLDER_DEPTH = 32
"""Deepest folder nesting in such a folder, and in a seed file's path."""
