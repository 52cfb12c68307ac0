"""Tests for toolkit spec loading (ToolEmu JSON, built-in specs, specs next to cases) and check_toolkit."""

from __future__ import annotations

import copy
import json
import re
from importlib import resources
from pathlib import Path

import pytest

from tests.formats import FORMATS, formats
from toolemu.core.errors import CaseError
from toolemu.core.types import ToolkitSpec
from toolemu.toolkits.checker import check_toolkit
from toolemu.toolkits.spec_loader import (
    builtin_toolkit_specs,
    dump_toolkit_spec,
    find_specs_near,
    load_toolkit_specs,
)

SAMPLE = FORMATS / "toolemu" / "toolkits_sample.json"
OWN_SPECS = Path(str(resources.files("toolemu.toolkits").joinpath("specs")))


def _own_specs() -> list[dict]:
    """The built-in toolkit specs as one ToolEmu toolkit file would hold them (our own text), by file name."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(OWN_SPECS.glob("*.json"))]


def _write(tmp_path: Path, data: object, name: str = "toolkits.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@formats
def test_load_toolkit_specs_sample_loads_every_toolkit() -> None:
    specs = load_toolkit_specs(SAMPLE)
    assert len(specs) == 13
    assert specs["Gmail"].tool_names()[0].startswith("Gmail")
    for spec in specs.values():
        check_toolkit(spec)


@formats
def test_load_toolkit_specs_sample_quirks_missing_required_and_exceptions() -> None:
    specs = load_toolkit_specs(SAMPLE)
    redirect = specs["EmergencyDispatchSystem"].find("EmergencyDispatchSystemRedirectDispatchResources")
    assert redirect is not None
    by_name = {p.name: p for p in redirect.parameters}
    assert by_name["target_type"].required is False  # the key is absent in ToolEmu's data
    saved = specs["FedExShipManager"].find("FedExShipManagerSearchSavedAddresses")
    assert saved is not None and saved.exceptions == ()


def test_load_toolkit_specs_accepts_one_object_and_null_required(tmp_path: Path) -> None:
    data = copy.deepcopy(_own_specs()[0])
    data["tools"][1]["parameters"] = [{"name": "x", "type": "null", "description": "d", "required": None}]
    specs = load_toolkit_specs(_write(tmp_path, data))
    param = specs["Calendar"].tools[1].parameters[0]
    assert (param.type, param.required) == ("null", False)


def test_load_toolkit_specs_bad_type_names_file_and_path(tmp_path: Path) -> None:
    data = _own_specs()
    data[3]["tools"][2]["parameters"][0]["type"] = "str"
    path = _write(tmp_path, data)
    expected = (
        f"{path}: [3].tools[2].parameters[0].type: 'str' is not one of string, integer, number, boolean"
    )
    with pytest.raises(CaseError, match=re.escape(expected)):
        load_toolkit_specs(path)


def test_load_toolkit_specs_unknown_key_names_file_and_path(tmp_path: Path) -> None:
    data = _own_specs()
    data[1]["tools"][0]["returns"][0]["format"] = "iso"
    path = _write(tmp_path, data)
    with pytest.raises(CaseError, match=re.escape(f"{path}: [1].tools[0].returns[0].format: unknown field")):
        load_toolkit_specs(path)


def test_load_toolkit_specs_missing_field_names_file_and_path(tmp_path: Path) -> None:
    data = _own_specs()
    del data[0]["tools"][4]["summary"]
    path = _write(tmp_path, data)
    with pytest.raises(CaseError, match=re.escape(f"{path}: [0].tools[4].summary: Field required")):
        load_toolkit_specs(path)


def test_load_toolkit_specs_invalid_json_names_line(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    path.write_text('[\n  {"toolkit": "X",\n  oops\n]', encoding="utf-8")
    with pytest.raises(CaseError, match=re.escape(f"{path}:3: invalid JSON")):
        load_toolkit_specs(path)


def test_load_toolkit_specs_duplicate_toolkit_is_error(tmp_path: Path) -> None:
    data = _own_specs()[:1] * 2
    with pytest.raises(CaseError, match=re.escape("toolkit `Calendar` is defined twice")):
        load_toolkit_specs(_write(tmp_path, data))


def test_load_toolkit_specs_missing_file_is_error(tmp_path: Path) -> None:
    with pytest.raises(CaseError, match="not found"):
        load_toolkit_specs(tmp_path / "nope.json")


@formats
def test_dump_toolkit_spec_round_trips(tmp_path: Path) -> None:
    for spec in load_toolkit_specs(SAMPLE).values():
        path = tmp_path / f"{spec.toolkit}.json"
        path.write_text(dump_toolkit_spec(spec), encoding="utf-8")
        assert load_toolkit_specs(path) == {spec.toolkit: spec}


BUILTIN = builtin_toolkit_specs()


def test_builtin_toolkit_specs_has_at_least_six() -> None:
    assert len(BUILTIN) >= 6
    assert {"EmailClient", "OnlineBanking", "SmartLock", "CloudDrive", "SocialMedia", "Calendar"} <= set(
        BUILTIN
    )


@pytest.mark.parametrize("name", sorted(BUILTIN), ids=sorted(BUILTIN))
def test_builtin_toolkit_specs_pass_check_toolkit(name: str) -> None:
    spec = BUILTIN[name]
    check_toolkit(spec)
    assert spec.description_for_model and all(t.parameters or t.returns for t in spec.tools)


def test_builtin_toolkit_specs_returns_a_copy() -> None:
    specs = builtin_toolkit_specs()
    specs.clear()
    assert builtin_toolkit_specs()


def test_find_specs_near_reads_case_and_parent_folders(tmp_path: Path) -> None:
    sample = _own_specs()
    (tmp_path / "toolkits").mkdir()
    (tmp_path / "case-a" / "toolkits").mkdir(parents=True)
    _write(tmp_path / "toolkits", sample[:2], "shared.json")
    nearer = copy.deepcopy(sample[0])
    nearer["description_for_model"] = "nearer copy"
    _write(tmp_path / "case-a" / "toolkits", nearer, "Calendar.json")
    specs = find_specs_near(tmp_path / "case-a")
    assert set(specs) == {"Calendar", "CloudDrive"}
    assert specs["Calendar"].description_for_model == "nearer copy"
    assert find_specs_near(tmp_path / "elsewhere" / "x") == {}


def _spec(**tool_overrides: object) -> ToolkitSpec:
    tool = {
        "name": "Send",
        "summary": "Sends.",
        "parameters": [{"name": "to", "type": "string"}],
        **tool_overrides,
    }
    return ToolkitSpec.model_validate({"toolkit": "Mail", "name_for_model": "Mail", "tools": [tool]})


def test_check_toolkit_duplicate_tool_name_is_error() -> None:
    spec = ToolkitSpec.model_validate(
        {"toolkit": "Mail", "name_for_model": "Mail", "tools": [{"name": "Send", "summary": "a"}] * 2}
    )
    with pytest.raises(CaseError, match=re.escape("toolkit `Mail`: duplicate tool name `Send`")):
        check_toolkit(spec)


def test_check_toolkit_empty_summary_is_error() -> None:
    with pytest.raises(CaseError, match=re.escape("toolkit `Mail`: tools[0].summary: empty")):
        check_toolkit(_spec(summary="  "))


def test_check_toolkit_duplicate_parameter_is_error() -> None:
    params = [{"name": "to", "type": "string"}, {"name": "to", "type": "array"}]
    with pytest.raises(CaseError, match=re.escape("toolkit `Mail`: tools[0]: duplicate parameter `to`")):
        check_toolkit(_spec(parameters=params))


def test_check_toolkit_bad_tool_name_is_error() -> None:
    with pytest.raises(CaseError, match=re.escape("tools[0].name: 'send mail' must be letters")):
        check_toolkit(_spec(name="send mail"))
