"""GRPO with rollouts from an OpenAI-compatible server (the real ``openai`` client on a local server that serves
its own copy of the tiny model), kept on-policy by a weight sync after every step."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.fakes.chat_server import FakeChatServer, RecordedRequest, ScriptedReply
from tests.fakes.toy import TOY_CASE, toy_env_config
from tests.training.grpo.test_grpo import _config
from toolemu.core.errors import LLMBackendError
from toolemu.core.types import Message
from toolemu.llm import OpenAICompatModel, SamplingParams
from toolemu.llm.transformers_local import TransformersChatModel
from toolemu.training.grpo import GRPOTrainer, LoraAdapterSync, LoraSettings, StateDictSync

pytestmark = pytest.mark.enable_socket


class ServedPolicy:
    """What a vLLM server does for these tests: generates with its own weights, may swap LoRA adapters."""

    def __init__(self, folder: Path, name: str) -> None:
        self.chat_model = TransformersChatModel(folder)
        self.base = self.chat_model.model
        self.name = name
        self.adapters: dict[str, object] = {}
        self.calls: list[str] = []

    def respond(self, request: RecordedRequest) -> ScriptedReply:
        body = request.body
        model = str(body["model"])
        if model != self.name and model not in self.adapters:
            return ScriptedReply(status=404, error_message=f"model {model} is not served")
        self.chat_model.model = self.adapters.get(model, self.base)
        messages = [Message(role=m["role"], content=m["content"]) for m in body["messages"]]  # type: ignore[attr-defined]
        params = SamplingParams(temperature=float(body["temperature"]), max_tokens=int(body["max_tokens"]),  # type: ignore[arg-type]
                                stop=tuple(body.get("stop") or ()), seed=body.get("seed"))  # type: ignore[arg-type]
        return ScriptedReply(text=self.chat_model.chat(messages, params).text)

    def load(self, request: RecordedRequest) -> ScriptedReply:
        import peft

        body = request.body
        self.calls.append(f"load {body['lora_name']}")
        name = str(body["lora_name"])
        self.adapters[name] = peft.PeftModel.from_pretrained(copy.deepcopy(self.base), str(body["lora_path"]),
                                                             adapter_name=name)
        return ScriptedReply(text="ok")

    def unload(self, request: RecordedRequest) -> ScriptedReply:
        self.calls.append(f"unload {request.body['lora_name']}")
        return ScriptedReply(text="ok")


def test_trainer_server_rollouts_follow_the_weights_the_trainer_pushes(tiny_folder: Path) -> None:
    served = ServedPolicy(tiny_folder, "policy")
    with FakeChatServer(default=served.respond) as server:
        rollout = OpenAICompatModel("policy", base_url=server.base_url, api_key="k")
        sync = StateDictSync(served.base.load_state_dict)
        trainer = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(), env_config=toy_env_config(),
                              rollout_model=rollout, weight_sync=sync)
        rows = trainer.train()
    assert all(row["train/grad_norm"] > 0 for row in rows)
    assert len(server.chat_requests) == sum(row["rollout/steps_mean"] * row["rollout/episodes"] for row in rows)
    ours = dict(trainer.model.named_parameters())
    assert all(bool((p == ours[n]).all()) for n, p in served.base.named_parameters())  # the server has step 2


def test_lora_adapter_sync_serves_each_step_under_a_new_name(tiny_folder: Path, tmp_path: Path) -> None:
    served = ServedPolicy(tiny_folder, "policy")
    routes = {"/load_lora_adapter": served.load, "/unload_lora_adapter": served.unload}
    with FakeChatServer(default=served.respond, routes=routes) as server:
        rollout = OpenAICompatModel("policy", base_url=server.base_url, api_key="k")
        sync = LoraAdapterSync(server.base_url, tmp_path / "adapters", api_key="k")
        trainer = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(lora=LoraSettings(r=2)),
                              env_config=toy_env_config(), rollout_model=rollout, weight_sync=sync)
        trainer.train()
    models = [r.body["model"] for r in server.chat_requests]
    assert set(models) == {"policy", "toolemu-policy-step-1"}  # step 2's rollouts used step 1's adapter
    assert models.index("toolemu-policy-step-1") > len(models) - models[::-1].index("policy") - 1
    assert served.calls == ["load toolemu-policy-step-1", "load toolemu-policy-step-2", "unload toolemu-policy-step-1"]
    config = json.loads((tmp_path / "adapters" / "step-2" / "adapter_config.json").read_text())
    assert config["r"] == 2
    assert rollout.name == "openai:policy" and trainer.rollout_model.name == "openai:toolemu-policy-step-2"


def test_lora_adapter_sync_stops_training_when_the_server_refuses(tiny_folder: Path, tmp_path: Path) -> None:
    served = ServedPolicy(tiny_folder, "policy")
    routes = {"/load_lora_adapter": lambda request: ScriptedReply(status=400, text="LoRA is not enabled")}
    with FakeChatServer(default=served.respond, routes=routes) as server:
        rollout = OpenAICompatModel("policy", base_url=server.base_url, api_key="k")
        trainer = GRPOTrainer(TransformersChatModel(tiny_folder), [TOY_CASE], _config(lora=LoraSettings(r=2)),
                              env_config=toy_env_config(), rollout_model=rollout,
                              weight_sync=LoraAdapterSync(server.base_url, tmp_path))
        with pytest.raises(LLMBackendError, match="answered HTTP 400: LoRA is not enabled"):
            trainer.train()
    assert trainer.step == 1  # the update is kept; the stale server is not used for another step
