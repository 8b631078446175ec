"""Projects over a real vault: a person's notes placed by their folder or their own
`project:` line, a mapping changed without a rebuild, the CLI's --project, rules and work
state at the terminal."""

from __future__ import annotations

from pathlib import Path

from tests.cli_support import invoke, invoke_json
from tests.helpers import create_args, git
from vault_tool.engine.vault import Vault


def _write(root: Path, path: str, text: str) -> None:
    (root / path).parent.mkdir(parents=True, exist_ok=True)
    (root / path).write_text(text)


def test_notes_are_placed_by_their_line_their_folder_or_the_default(vault_path: Path) -> None:
    _write(vault_path, "clients/acme.md", "# Acme invoices\n\nAcme pays invoices late.\n")
    _write(vault_path, "ideas/late.md", "---\nproject: blog\n---\n# Invoices paid late\n")
    _write(vault_path, "inbox.md", "---\nproject: Not A Name\n---\n# Late invoices list\n")
    git(vault_path, "add", ".")
    git(vault_path, "commit", "-q", "-m", "A person's notes")
    config = vault_path / ".vault/config.toml"

    def titles(vault: Vault, project: str) -> list[str]:
        hits = vault.search({"query": "invoices late", "project": project})["selected_hits"]
        return sorted(h["title"] for h in hits)

    with Vault.open(vault_path) as vault:
        default = vault.projects.default
        assert titles(vault, "blog") == ["Invoices paid late"]
        assert titles(vault, default) == ["Acme invoices", "Late invoices list"]
        assert titles(vault, "acme") == []
    config.write_text(config.read_text() + '\nclients = "acme"\n')  # under [projects.folders]
    with Vault.open(vault_path) as vault:  # the same index: a mapping needs no rebuild
        assert titles(vault, "acme") == ["Acme invoices"]
        assert titles(vault, default) == ["Late invoices list"]
        assert vault.project_of("clients/acme") == "acme"
    assert "project: Not A Name" in (vault_path / "inbox.md").read_text()  # kept as written


def test_the_cli_lists_and_searches_by_project(vault_path: Path) -> None:
    with Vault.open(vault_path) as vault:
        shop = create_args("Ana owns the billing service")
        shop["semantic_delta"]["project"] = "shop"
        vault.remember(shop)
        vault.remember(create_args("Ana owns the blog engine"))
    listed = invoke_json("list", "--project", "shop", "--vault", vault_path)
    assert [m["title"] for m in listed] == ["Ana owns the billing service"]
    found = invoke_json("search", "Ana", "--project", "shop", "--vault", vault_path)
    assert [h["title"] for h in found["selected_hits"]] == ["Ana owns the billing service"]
    bad = invoke("list", "--project", "Shop!", "--vault", vault_path)
    assert bad.exit_code == 2 and "project" in bad.stderr


def test_rules_and_work_state_at_the_terminal(vault_path: Path) -> None:
    added = invoke_json("rules", "add", "Run the tests first", "--when", "you commit",
                        "--vault", vault_path)  # fmt: skip
    assert added["status"] == "added"
    again = invoke_json("rules", "add", "run the tests  first", "--when", "You commit",
                        "--vault", vault_path)  # fmt: skip
    assert again["status"] == "unchanged" and again["id"] == added["id"]
    listed = invoke_json("rules", "list", "--vault", vault_path)
    assert [r["then"] for r in listed["rules"]] == ["Run the tests first"]
    assert invoke_json("rules", "confirm", added["id"], "--vault", vault_path)["recheck"] is None
    saved = invoke_json("state", "set", "todo", "ship docs", "fix hooks", "--project", "shop",
                        "--vault", vault_path)  # fmt: skip
    assert saved["path"] == "state/shop/todo.yaml" and saved["items"] == 2
    read = invoke_json("state", "get", "todo", "--project", "shop", "--vault", vault_path)
    assert read["items"] == ["ship docs", "fix hooks"]
    bad = invoke("state", "set", "todo", "--json-items", "[1,", "--vault", vault_path)
    assert bad.exit_code == 2 and "--json-items" in bad.stderr
    assert git(vault_path, "log", "-1", "--format=%s") == "Work state: shop/todo (2 items)"


def test_a_rule_written_by_hand_is_not_added_again(vault_path: Path) -> None:
    rule = "rule:\n  when: you commit\n  then: Run the tests first\n"  # no scope: everywhere
    front = f"---\nmemory_type: rule\ntitle: Run the tests first\n{rule}---\n"
    _write(vault_path, "rules/tests.md", front + "Before every push.\n")
    git(vault_path, "add", ".")
    git(vault_path, "commit", "-q", "-m", "A person's rule")
    again = invoke_json("rules", "add", "Run the tests first", "--when", "you commit",
                        "--vault", vault_path)  # fmt: skip
    assert again["status"] == "unchanged"
    assert [r["then"] for r in invoke_json("rules", "list", "--vault", vault_path)["rules"]] == [
        "Run the tests first"
    ]
    invoke_json("rules", "add", "Keep the changelog short", "--vault", vault_path)
    shown = invoke("rules", "list", "--vault", vault_path).stdout
    assert "When you commit: Run the tests first" in shown
    assert "Always: Keep the changelog short" in shown


def test_a_projects_rule_is_in_that_project(vault_path: Path) -> None:
    added = invoke_json("rules", "add", "Deploy web on Tuesdays", "--scope", "project",
                        "--scope-name", "web", "--vault", vault_path)  # fmt: skip
    assert "project: web\n" in (vault_path / added["path"]).read_text()
    with Vault.open(vault_path) as vault:
        assert vault.project_of(added["id"]) == "web"
        found = vault.search({"query": "deploy Tuesdays", "project": "web"})["selected_hits"]
        assert [h["memory_id"] for h in found] == [added["id"]]


def test_a_search_for_one_project_shows_no_other_projects_replacement(vault_path: Path) -> None:
    with Vault.open(vault_path) as vault:
        old = create_args("Ana owns the billing service", project="shop")
        first = vault.remember(old)
        newer = create_args("Ana hands billing over", body="Bo owns it now.", project="blog",
                            supersedes=[first["memory_id"]])  # fmt: skip
        vault.remember(newer)
        shop = vault.search({"query": "Ana billing", "project": "shop"})["selected_hits"]
        everywhere = vault.search({"query": "Ana billing"})["selected_hits"]
    assert [h["memory_id"] for h in shop] == [first["memory_id"]]
    assert shop[0].get("superseded_by") in (None, [])
    assert len(everywhere) == 2


def test_confirming_a_rule_whose_block_is_not_valid_keeps_the_persons_words(vault_path: Path):
    front = "---\nmemory_type: rule\ntitle: Run the tests\nrule:\n  scope: somewhere\n---\n"
    _write(vault_path, "rules/odd.md", front + "Before every push.\n")
    git(vault_path, "add", ".")
    git(vault_path, "commit", "-q", "-m", "A person's rule")
    [rule] = invoke_json("rules", "list", "--vault", vault_path)["rules"]
    refused = invoke("rules", "confirm", rule["id"], "--vault", vault_path)
    assert refused.exit_code == 2 and "rules/odd.md" in refused.stderr
    assert "scope: somewhere" in (vault_path / "rules/odd.md").read_text()


def test_a_create_is_compared_with_its_own_projects_memories_only(vault_path: Path) -> None:
    def into(project: str, body: str) -> dict:
        args = create_args("Ana owns the blog engine", body)
        args["semantic_delta"]["project"] = project
        return args

    with Vault.open(vault_path) as vault:
        blog = vault.remember(into("blog", "She took it over."))
        shop = vault.remember(into("shop", "She took it over."))  # the same words, elsewhere
        again = vault.remember(into("shop", "She took it over."))
        near = vault.remember(into("shop", "Since May."))
        assert vault.search({"query": "Ana blog engine", "project": "shop"})["selected_hits"]
    assert shop["status"] == "created" and shop["memory_id"] != blog["memory_id"]
    assert "project: shop\n" in (vault_path / shop["path"]).read_text()
    assert (again["status"], again["memory_id"]) == ("unchanged", shop["memory_id"])
    assert [s["memory_id"] for s in near["similar"]] == [shop["memory_id"]]


def test_a_project_search_sees_what_was_written_to_it_since_the_last_one(vault: Vault) -> None:
    """A project's memories are kept per index generation: a write makes a new one."""

    def titles() -> list[str]:
        hits = vault.search({"query": "Ana owns", "project": "shop"})["selected_hits"]
        return sorted(h["title"] for h in hits)

    for n, title in enumerate(["Ana owns the billing service", "Ana owns the cart"]):
        made = create_args(title)
        made["semantic_delta"]["project"] = "shop"
        vault.remember(made)
        vault.remember(create_args(f"Ana owns the blog engine {n}"))  # (another project)
        assert titles() == sorted(["Ana owns the billing service", "Ana owns the cart"][: n + 1])
