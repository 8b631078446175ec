"""`export --format kg-jsonl` writes the entities `vault-tool entities` resolves, one each."""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli_support import invoke, invoke_json
from tests.helpers import create_args

# One person, described three ways that share words: one entity with three glosses.
GLOSSES = (
    "backend engineer on the platform team",
    "senior backend engineer",
    "platform team lead engineer",
)


def remember_ana_three_ways(vault_path: Path) -> None:
    from vault_tool.engine.vault import Vault

    with Vault.open(vault_path, client="pytest") as vault:
        for number, gloss in enumerate(GLOSSES, 1):
            call = create_args(f"Ana note {number}", body=f"Note {number} about Ana.")
            call["semantic_delta"]["entities"][0]["is"] = gloss
            vault.remember(call)


def kg_lines(vault_path: Path) -> list[dict]:
    done = invoke("export", "--format", "kg-jsonl", "--vault", vault_path)
    assert done.exit_code == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_one_person_with_three_glosses_is_one_kg_entity_as_entities_shows_it(vault_path: Path):
    remember_ana_three_ways(vault_path)
    listed = invoke_json("entities", "--kind", "person", "--vault", vault_path)["entities"]
    assert [(e["name"], len(e["glosses"])) for e in listed] == [("Ana", 3)]

    lines = kg_lines(vault_path)
    people = [line for line in lines if line["type"] == "entity" and line["entityType"] == "person"]
    assert [p["name"] for p in people] == ["Ana"]
    observations = people[0]["observations"]
    assert set(GLOSSES) <= set(observations)
    assert sum("mentioned in memory" in o for o in observations) == 3
    relations = [line for line in lines if line["type"] == "relation"]
    assert relations == [
        {"type": "relation", "from": "Ana", "to": "billing service", "relationType": "owns"}
    ]


def test_two_people_sharing_a_name_stay_two_entities_named_by_their_gloss(vault_path: Path):
    from vault_tool.engine.vault import Vault

    with Vault.open(vault_path, client="pytest") as vault:
        vault.remember(create_args("Ana owns the billing service"))
        designer = create_args("Ana designed the invoice page")
        designer["semantic_delta"]["entities"][0]["is"] = "product designer on the web team"
        designer["semantic_delta"]["facts"][0]["predicate"] = "designed"
        vault.remember(designer)
    lines = kg_lines(vault_path)
    names = sorted(line["name"] for line in lines if line["type"] == "entity")
    assert names == [
        "Ana (backend engineer on the platform team)",
        "Ana (product designer on the web team)",
        "billing service",
    ]
    relations = {(r["from"], r["relationType"]) for r in lines if r["type"] == "relation"}
    assert relations == {
        ("Ana (backend engineer on the platform team)", "owns"),
        ("Ana (product designer on the web team)", "designed"),
    }
