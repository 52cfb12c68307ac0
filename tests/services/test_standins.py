"""Stand-in documents: deterministic, readable by the libraries OAS agents and evaluators use (PyPDF2, openpyxl,
pandas: the OAS sandbox profile's own), and true to the constants the upstream evaluators hard-code."""

from __future__ import annotations

import io
import json
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

from toolemu.core.errors import CaseError, ConfigError
from toolemu.core.types import EnvironmentSpec, ServiceFile
from toolemu.services.case_files import service_files, uses_standin
from toolemu.services.standins import STANDINS, build_standin
from toolemu.services.standins.office import PRODUCTS, SURVEY_VOTES
from toolemu.toolkits.sandbox import oas_image

DOCS = {n: build_standin(n) for n in STANDINS}


def _oas_python(code: str, files: dict[str, bytes], tmp_path: Path) -> object:
    """Runs ``code`` with the OAS profile's libraries over ``files`` written to ``tmp_path``; returns its JSON."""
    try:
        site = oas_image.built_env_dir() / "site"
    except Exception as e:  # the libraries are built by `make setup`
        pytest.skip(f"OAS libraries not built: {e}")
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
    out = subprocess.run([oas_image.SANDBOX_PYTHON, "-c", code], cwd=tmp_path, env={"PYTHONPATH": str(site)},
                         capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_standins_are_deterministic_and_placed() -> None:
    for name in STANDINS:
        assert build_standin(name) == DOCS[name]
    assert list(DOCS["drinks_survey.pdf"]) == ["Documents/Food/drinks_survey.pdf"]
    assert len(DOCS["invoices_pdfs"]) == 20
    assert all(p.startswith("Documents/Financials/invoices_pdfs/INV00") for p in DOCS["invoices_pdfs"])
    assert list(build_standin("bill.pdf", "Shared/bill.pdf")) == ["Shared/bill.pdf"]
    with pytest.raises(ConfigError, match=re.escape("stand-in document `nope.pdf` is not known")):
        build_standin("nope.pdf")


def test_survey_winner_is_not_vita_coco() -> None:
    votes: dict[str, int] = {}
    for _name, drink in SURVEY_VOTES:
        votes[drink] = votes.get(drink, 0) + 1
    assert max(votes, key=lambda d: votes[d]) != "Vita Coco"


def test_product_totals_avoid_the_evaluators_markers() -> None:
    price = {name.split(" (")[0]: p for name, _c, p in PRODUCTS}
    laptop, desktop, chair = price["Dell XPS 15 Laptop"], price["HP WorkStation Desktop Computer"], price[
        "Ergonomic Office Chair"]
    for total in (10 * laptop + 5 * desktop, laptop + desktop + chair, laptop + desktop, 2 * laptop + desktop):
        assert "10000" not in f"{total:.2f}" and "3000" not in f"{total:.2f}"


def test_documents_read_with_the_oas_libraries(tmp_path: Path) -> None:
    files = {
        "survey.pdf": DOCS["drinks_survey.pdf"]["Documents/Food/drinks_survey.pdf"],
        "i9.pdf": DOCS["i-9.pdf"]["Documents/Admin/i-9.pdf"],
        "paper.pdf": DOCS["OpenHands.pdf"]["Documents/Research/OpenHands.pdf"],
        "customer.xlsx": DOCS["Customer.xlsx"]["Documents/Data Analysis/Customer.xlsx"],
        "policy.pdf": DOCS["Reimbursement Policy.pdf"]["Documents/Administrative Specialist/Reimbursement Policy.pdf"],
    }
    code = """
import json, PyPDF2, pandas as pd
survey = PyPDF2.PdfReader("survey.pdf").pages[0].extract_text()
fields = PyPDF2.PdfReader("i9.pdf").get_fields()
df = pd.read_excel("customer.xlsx", skiprows=2, usecols=["Order ID", "Location", "Domestic or International"])
print(json.dumps({"survey": survey, "fields": sorted(fields), "pages": len(PyPDF2.PdfReader("paper.pdf").pages),
                  "orders": [str(o).lstrip("0") for o in df["Order ID"]],
                  "us": [str(o) for o, loc in zip(df["Order ID"], df["Location"]) if loc.endswith("USA")],
                  "policy": PyPDF2.PdfReader("policy.pdf").pages[0].extract_text()}))
"""
    got = _oas_python(code, files, tmp_path)
    assert isinstance(got, dict)
    assert "Sparkling Water" in got["survey"] and "Vita Coco" in got["survey"]
    assert "Date of Birth mmddyyyy" in got["fields"]
    assert got["pages"] == 17
    assert got["orders"] == [str(n) for n in range(1010, 1028)]
    assert got["us"] == ["1010", "1011", "1016", "1017", "1027"]
    assert "not accepted" in got["policy"].replace("\n", " ")


def test_i9_filled_the_usual_way_reads_back_the_date_of_birth(tmp_path: Path) -> None:
    code = """
import io, json, PyPDF2
from PyPDF2.generic import ArrayObject, DictionaryObject, NameObject
reader = PyPDF2.PdfReader("i9.pdf")
writer = PyPDF2.PdfWriter()
writer.append_pages_from_reader(reader)
writer.update_page_form_field_values(writer.pages[0], {"Date of Birth mmddyyyy": "06/12/1986"})
annots = [a for page in writer.pages for a in page.get("/Annots", [])]
writer._root_object[NameObject("/AcroForm")] = DictionaryObject({NameObject("/Fields"): ArrayObject(annots)})
buffer = io.BytesIO(); writer.write(buffer)
fields = PyPDF2.PdfReader(io.BytesIO(buffer.getvalue())).get_fields()
print(json.dumps({k: v.get("/V") for k, v in fields.items() if v.get("/V")}))
"""
    got = _oas_python(code, {"i9.pdf": DOCS["i-9.pdf"]["Documents/Admin/i-9.pdf"]}, tmp_path)
    assert got == {"Date of Birth mmddyyyy": "06/12/1986"}


def test_resumes_zip_holds_pdfs() -> None:
    archive = zipfile.ZipFile(io.BytesIO(DOCS["resumes.zip"]["Documents/Human Resources Team/resumes/resumes.zip"]))
    assert len(archive.namelist()) == 6 and all(n.endswith(".pdf") for n in archive.namelist())
    assert all(archive.read(n).startswith(b"%PDF-1.4") for n in archive.namelist())


def test_case_files_read_sources_beneath_the_case_and_build_standins(tmp_path: Path) -> None:
    (tmp_path / "utils").mkdir()
    (tmp_path / "utils" / "a.csv").write_text("x,y\n1,2\n")
    env = EnvironmentSpec(base_dir=str(tmp_path), service_files=(
        ServiceFile(service="owncloud", path="Documents/a.csv", source="utils/a.csv"),
        ServiceFile(service="owncloud", path="Documents/Financials/invoices_pdfs", standin="invoices_pdfs"),
    ))
    files = service_files(env)
    assert files["owncloud"]["Documents/a.csv"] == b"x,y\n1,2\n"
    assert len(files["owncloud"]) == 21 and uses_standin(env)
    (tmp_path / "utils" / "link.csv").symlink_to("/etc/passwd")
    outside = EnvironmentSpec(base_dir=str(tmp_path), service_files=(
        ServiceFile(service="owncloud", path="Documents/p", source="utils/link.csv"),))
    with pytest.raises(CaseError):
        service_files(outside)
    twice = EnvironmentSpec(base_dir=str(tmp_path), service_files=(
        ServiceFile(service="owncloud", path="Documents/a.csv", source="utils/a.csv"),
        ServiceFile(service="owncloud", path="Documents/a.csv", standin="bill.pdf")))
    with pytest.raises(CaseError, match="given twice"):
        service_files(twice)


@pytest.mark.parametrize("path", ["/abs", "a/../b", "a//b", ""], ids=["absolute", "dotdot", "empty-part", "empty"])
def test_service_file_path_must_be_clean_and_relative(path: str) -> None:
    with pytest.raises(ValueError):
        ServiceFile(service="owncloud", path=path, standin="bill.pdf")
    with pytest.raises(ValueError, match="exactly one of"):
        ServiceFile(service="owncloud", path="Documents/x", source="a", standin="bill.pdf")
