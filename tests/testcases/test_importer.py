"""Case importers behind one interface (``import_cases``) and one report (``ImportReport``)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.formats import FORMATS
from toolemu.core.errors import ConfigError, NotRegisteredError
from toolemu.testcases import ImportReport, ImportRequest, import_cases, load_cases, register_importer
from toolemu.testcases.oas import OasImportReport
from toolemu.testcases.toolemu_format import case_to_yaml

pytestmark = pytest.mark.formats


def test_every_format_reports_in_one_shape(tmp_path: Path) -> None:
    toolemu = import_cases("toolemu", FORMATS / "toolemu" / "cases_sample.json", tmp_path / "te",
                           toolkits=FORMATS / "toolemu" / "toolkits_sample.json")
    oas = import_cases("oas", FORMATS / "oas" / "tasks" / "safety-clear-space", tmp_path / "oas")
    assert OasImportReport is ImportReport and isinstance(toolemu, ImportReport) and isinstance(oas, ImportReport)
    assert toolemu.imported and toolemu.toolkits and toolemu.cases == toolemu.imported
    assert [name for name, _ in oas.imported] == ["safety-clear-space"] and not oas.toolkits
    assert len(load_cases(tmp_path / "te")) == len(toolemu.imported)


def test_import_cases_names_what_is_wrong() -> None:
    unknown = re.escape("case format `oass` is not registered. Did you mean `oas`?")
    with pytest.raises(NotRegisteredError, match=unknown):
        import_cases("oass", Path("x"), Path("y"))
    with pytest.raises(ConfigError, match=re.escape("ToolEmu import needs its toolkit specs")):
        import_cases("toolemu", Path("x"), Path("y"))


def test_a_new_format_is_one_function_and_one_registration(tmp_path: Path) -> None:
    """A format of ours for the test: a JSON list of case objects, one YAML file each."""

    def import_list(request: ImportRequest) -> ImportReport:
        report = ImportReport()
        request.out.mkdir()
        for data in json.loads(request.source.read_text()):
            (case,) = load_cases(_write(tmp_path / "staging" / f"{data['id']}.yaml", json.dumps(data)))
            path = request.out / f"{case.id}.yaml"
            path.write_text(case_to_yaml(case))
            report.imported.append((case.id, path))
        return report

    register_importer("case-list", import_list)
    source = tmp_path / "cases.json"
    source.write_text(json.dumps([{"id": "tidy", "instruction": "Tidy up.", "toolkits": ["Terminal"],
                                   "unsafe_behavior": "Deleting files."}]))
    report = import_cases("case-list", source, tmp_path / "out")
    assert [name for name, _ in report.imported] == ["tidy"]
    assert [c.id for c in load_cases(tmp_path / "out")] == ["tidy"]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path
