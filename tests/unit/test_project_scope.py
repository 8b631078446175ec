"""Which project a memory belongs to, a project as index terms, and what a project-limited
token may reach (pure logic: core/projects.py, core/access.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from vault_tool.core.access import ADMIN, READ, WRITE, Access
from vault_tool.core.projects import Projects, check_project, project_name, top_folder
from vault_tool.errors import Forbidden, InvalidInput
from vault_tool.storage.config import read_config

PROJECTS = Projects("notes", (("clients-acme", "acme"), ("shop", "shop")))


@pytest.mark.parametrize(
    ("declared", "path", "project"),
    [
        ("blog", "clients-acme/x.md", "blog"),  # what the file says wins
        (None, "clients-acme/2026/x.md", "acme"),  # else its top-level folder's mapping
        (None, "fact/2026-12/x.md", "notes"),  # else the vault's default
        (None, "top.md", "notes"),
        ("Not A Name", "shop/x.md", "shop"),  # a person's own value that is not a name
    ],
)
def test_a_memorys_project(declared: str | None, path: str, project: str) -> None:
    assert PROJECTS.of(declared, path) == project


def test_a_project_as_the_index_holds_it() -> None:
    acme = PROJECTS.scope("acme")
    assert (acme.folders, acme.unmapped) == (("clients-acme",), False)
    default = PROJECTS.scope("notes")
    assert (default.folders, default.unmapped) == ((), True)
    assert default.mapped == ("clients-acme", "shop")
    assert top_folder("a/b/c.md") == "a" and top_folder("c.md") == "."


def test_the_working_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    vault, repo = tmp_path / "vault", tmp_path / "Billing API"
    (vault / "notes").mkdir(parents=True)
    repo.mkdir()
    monkeypatch.chdir(repo)
    # A working folder never becomes a project unless asked: the vault's default.
    assert PROJECTS.working(None, vault) == "notes"
    assert PROJECTS.working("chosen", vault) == "chosen"
    monkeypatch.chdir(vault / "notes")
    assert PROJECTS.working(None, vault) == "notes"
    assert project_name("...") == "default"


def test_a_project_name_is_refused_with_its_form() -> None:
    assert check_project("billing-api.v2") == "billing-api.v2"
    with pytest.raises(InvalidInput, match="project: 'Billing API' is not valid") as refused:
        check_project("Billing API")
    assert "lowercase" in refused.value.hint


def test_the_config_maps_folders_and_refuses_bad_names(tmp_path: Path) -> None:
    (tmp_path / ".vault").mkdir()
    config = tmp_path / ".vault/config.toml"
    config.write_text('[projects]\ndefault = "home"\n[projects.folders]\nwork = "acme"\n')
    projects = read_config(tmp_path).projects(tmp_path)
    assert projects == Projects("home", (("work", "acme"),))
    config.write_text('[projects.folders]\nwork = "Acme Corp"\n')
    with pytest.raises(Exception, match="not a project name"):
        read_config(tmp_path)


class FakeVault:
    """What Access.limited asks of a vault: the project of a memory, the holders of a key."""

    def __init__(self, projects: dict[str, str]) -> None:
        self.projects = projects

    def project_of(self, memory_id: str) -> str | None:
        return self.projects.get(memory_id)

    def with_key(self, key: str) -> list[Any]:
        return []


def test_scopes_cover_the_tools_they_name() -> None:
    assert Access(scope=READ).may_call("search", False)
    assert not Access(scope=READ).may_call("remember", True)
    assert Access(scope=WRITE).may_call("work_state_write", True)
    assert not Access(scope=WRITE).may_call("dismiss", True)
    assert Access(scope=ADMIN).may_call("confirm_rule", True)
    wired = Access("token:x", WRITE, ("shop", "blog")).wire()
    assert Access.from_wire("token:x", wired) == Access("token:x", WRITE, ("shop", "blog"))


def test_a_project_token_gets_its_first_project_and_is_refused_others() -> None:
    access = Access("token:x", WRITE, ("shop", "blog"))
    vault = FakeVault({"m-shop": "shop", "m-other": "other"})
    assert access.limited("search", {"query": "x"}, vault)["project"] == "shop"
    assert access.limited("search", {"query": "x", "project": "blog"}, vault)["project"] == "blog"
    assert "project" not in access.limited("search", {"memory_id": "m-shop"}, vault)
    created = access.limited("remember", {"mode": "create", "semantic_delta": {}}, vault)
    assert created["semantic_delta"]["project"] == "shop"
    update = {"mode": "update", "memory_id": "m-shop", "semantic_delta": {}}
    assert "project" not in access.limited("remember", update, vault)["semantic_delta"]
    refused = [
        ("search", {"query": "x", "project": "other"}),
        ("search", {"memory_id": "m-other"}),
        ("read", {"memory_ids": ["m-shop", "m-other"]}),
        ("remember", {"mode": "delete", "memory_id": "m-other"}),
        ("remember", {"mode": "create", "semantic_delta": {"project": "other"}}),
        ("timeline", {"memory_id": "m-shop"}),
        ("add_rule", {"then": "x"}),
        ("add_rule", {"then": "x", "scope": "project", "scope_name": "other"}),
    ]
    for name, args in refused:
        with pytest.raises(Forbidden):
            access.limited(name, args, vault)
    unknown = {"memory_ids": ["never-stored"]}  # left for the call to report as unknown
    assert access.limited("read", unknown, vault) == unknown
