"""Search against a real index on disk: fields, glosses and homonyms, filters, budget, ledger."""

from __future__ import annotations

import pytest

from tests.helpers import create_args, git
from vault_tool.errors import InvalidInput, NotFound


def remember_with(vault, title: str, body: str, entities: list, facts: list, **extra) -> dict:
    delta = {
        "memory_type": extra.pop("memory_type", "fact"),
        "title": title,
        "entities": entities,
        "facts": facts,
        "tags": extra.pop("tags", []),
        **extra,
    }
    return vault.remember(
        {"mode": "create", "content_md": f"# {title}\n\n{body}\n", "semantic_delta": delta}
    )


def ids_of(result: dict) -> list[str]:
    return [h["memory_id"] for h in result["selected_hits"]]


BILLING = {"n": "billing service", "kind": "service", "is": "the service that issues invoices"}
CHECKOUT = {"n": "checkout", "kind": "project", "is": "the redesign of the checkout flow"}


@pytest.fixture
def two_anas(vault):
    """Ana the backend engineer and Ana the designer, each in two memories."""
    backend_long = {"n": "Ana", "kind": "person", "is": "backend engineer on the platform team"}
    backend_short = {"n": "Ana", "kind": "person", "is": "platform engineer"}
    designer_long = {"n": "Ana", "kind": "person", "is": "product designer on the checkout team"}
    designer_short = {"n": "Ana", "kind": "person", "is": "designer"}
    cases = {
        "a1": ("Ana owns the billing service", "She took it over.", backend_long, BILLING, "owns"),
        "a2": (
            "Ana fixed the invoice retry bug",
            "Retries back off.",
            backend_short,
            BILLING,
            "fixed",
        ),
        "d1": (
            "Ana leads the checkout redesign",
            "Reviews on Thursday.",
            designer_long,
            CHECKOUT,
            "leads",
        ),
        "d2": (
            "Ana prefers comments in Figma",
            "Not in Slack.",
            designer_short,
            CHECKOUT,
            "reviews",
        ),
    }
    made = {
        key: remember_with(
            vault,
            title,
            body,
            [ana, thing],
            [{"subject": "Ana", "predicate": verb, "object": thing["n"]}],
        )
        for key, (title, body, ana, thing, verb) in cases.items()
    }
    return {k: v["memory_id"] for k, v in made.items()}


def test_gloss_query_finds_memories_of_that_entity_even_with_a_shorter_gloss(vault, two_anas):
    found = ids_of(vault.search({"query": "backend", "top_k": 10}))
    assert two_anas["a1"] in found
    assert two_anas["a2"] in found  # its own gloss says only "platform engineer"
    assert two_anas["d1"] not in found and two_anas["d2"] not in found


def test_homonyms_are_told_apart_by_their_glosses(vault, two_anas):
    designer = ids_of(vault.search({"query": "Ana the designer", "top_k": 4}))
    assert set(designer[:2]) == {two_anas["d1"], two_anas["d2"]}
    engineer = ids_of(vault.search({"query": "Ana the backend engineer", "top_k": 4}))
    assert set(engineer[:2]) == {two_anas["a1"], two_anas["a2"]}


def test_every_field_is_searchable(vault):
    made = remember_with(
        vault,
        "Deploy window",
        "Only in the morning.",
        [
            {"n": "Zoë", "kind": "person", "is": "release captain for the mobile app"},
            {"n": "staging", "kind": "environment", "is": "pre-production cluster"},
        ],
        [{"subject": "Zoë", "predicate": "approves_deploys_to", "object": "staging"}],
        tags=["releases"],
    )
    for query in (
        "deploy window",
        "morning",
        "zoe",
        "release captain",
        "approves deploys",
        "releases",
    ):
        assert ids_of(vault.search({"query": query})) == [made["memory_id"]], query


def test_a_write_is_searchable_when_remember_returns_with_its_version(vault, vault_path):
    made = vault.remember(create_args("Wombats dig burrows", body="Cube-shaped droppings."))
    hit = vault.search({"query": "cube shaped droppings"})["selected_hits"][0]
    assert hit["memory_id"] == made["memory_id"]
    assert hit["version_id"] == made["version_id"] == git(vault_path, "rev-parse", "HEAD")
    assert set(hit) >= {
        "memory_id",
        "version_id",
        "title",
        "memory_type",
        "score",
        "content_md",
        "truncated",
        "facts",
        "tags",
        "updated",
    }


def test_superseded_memory_ranks_below_its_replacement(vault):
    old = vault.remember(
        create_args("Staging runs in eu-west-1", body="Staging region is eu-west-1. " * 5)
    )
    new = vault.remember(
        create_args("Staging moves", body="Now elsewhere.", supersedes=[old["memory_id"]])
    )
    found = vault.search({"query": "staging region eu-west-1", "top_k": 5})
    order = ids_of(found)
    assert order.index(new["memory_id"]) < order.index(old["memory_id"])
    superseded = next(h for h in found["selected_hits"] if h["memory_id"] == old["memory_id"])
    assert superseded["superseded_by"] == [new["memory_id"]]


def test_expired_and_dismissed_memories_are_never_returned(vault):
    vault.remember(create_args("Old freeze on wombats", expires_at="2020-01-01"))
    vault.remember(create_args("Hidden wombat note", status="dismissed"))
    kept = vault.remember(create_args("Current wombat note"))
    assert ids_of(vault.search({"query": "wombat", "top_k": 10})) == [kept["memory_id"]]


def test_filters_by_type_tags_and_dates(vault):
    a = vault.remember(create_args("Wombat decision", tags=["animals", "burrows"]))
    b = vault.remember(create_args("Wombat gotcha", memory_type="gotcha", tags=["animals"]))
    assert ids_of(vault.search({"query": "wombat", "memory_types": ["gotcha"]})) == [b["memory_id"]]
    assert ids_of(vault.search({"query": "wombat", "tags": ["animals", "burrows"]})) == [
        a["memory_id"]
    ]
    assert ids_of(vault.search({"query": "wombat", "until": "2001-01-01"})) == []
    assert len(ids_of(vault.search({"query": "wombat", "since": "2001-01-01"}))) == 2


@pytest.mark.parametrize("budget", [200, 201, 333, 1000, 5000])
def test_byte_budget_is_never_exceeded_and_cuts_cleanly(vault, budget):
    bodies = []
    for n in range(6):
        body = ("Wombat 🦘 ünïcödé 漢字 paragraph. " * (10 + n) + "\n\n") * 3
        bodies.append(body)
        vault.remember(create_args(f"Wombat notes {n}", body=body))
    result = vault.search({"query": "wombat", "top_k": 6, "maximum_context_bytes": budget})
    total = sum(len(h["content_md"].encode("utf-8")) for h in result["selected_hits"])
    assert total <= budget
    for hit in result["selected_hits"]:
        full = vault.read(hit["memory_id"])["content_md"]
        assert full.startswith(hit["content_md"])  # a prefix: nothing invented, no broken char
        assert hit["truncated"] == (hit["content_md"] != full)
    assert any(h["truncated"] for h in result["selected_hits"])


def test_empty_results_say_why(vault):
    assert vault.search({"query": "anything"})["reason"] == "empty_vault"
    vault.remember(create_args())
    empty = vault.search({"query": "zebra unicorn"})
    assert empty["selected_hits"] == [] and empty["reason"] == "nothing_relevant"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({}, "query"),
        ({"query": "x", "memory_id": "notes/x"}, "query"),
        ({"memory_id": "notes/x", "top_k": 3}, "top_k"),
        ({"memory_id": "notes/x", "tags": ["a"]}, "tags"),
        ({"query": "x", "ledger": False}, "ledger"),
        ({"query": "x", "top_k": 500}, "top_k"),
        ({"query": "x", "since": "2026-13-40"}, "since"),
        ({"query": "x", "memory_types": ["banana"]}, "memory_types[0]"),
        ({"query": "x", "bogus": 1}, "bogus"),
    ],
)
def test_bad_search_calls_are_refused_naming_the_field(vault, args, field):
    with pytest.raises(InvalidInput) as refused:
        vault.search(args)
    assert refused.value.field == field
    assert refused.value.hint


def test_addressed_read_returns_the_memory_at_top_level(vault):
    made = vault.remember(create_args())
    read = vault.search({"memory_id": made["memory_id"], "ledger": True})
    assert read["memory_id"] == made["memory_id"] and read["version_id"] == made["version_id"]
    assert read["content_md"].startswith("# Ana owns")
    assert read["semantic_delta"]["facts"][0]["predicate"] == "owns"
    with pytest.raises(NotFound):
        vault.search({"memory_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV"})


def test_each_query_search_appends_one_ledger_record_and_results_never_carry_its_handle(vault):
    made = vault.remember(create_args())
    result = vault.search({"query": "billing", "top_k": 3}, client="agent-x")
    vault.search({"memory_id": made["memory_id"]})  # addressed reads are not recorded
    records = list(vault.ledger_records("search"))
    assert len(records) == 1
    record = records[0]
    assert record["query"] == "billing" and record["client"] == "agent-x"
    assert record["controls"] == {"top_k": 3}
    assert record["results"] == [
        {
            "rank": 1,
            "memory_id": made["memory_id"],
            "version_id": made["version_id"],
            "score": result["selected_hits"][0]["score"],
        }
    ]
    assert record["id"] not in repr(result)


def test_a_chain_of_replacements_puts_the_current_end_above_every_older_link(vault):
    oldest = vault.remember(
        create_args("Staging runs in eu-west-1", body="Staging region is eu-west-1. " * 5)
    )
    # Neither replacement shares a word with the query: only the chain leads to them.
    middle = vault.remember(
        create_args(
            "Moved to Frankfurt", body="Now in Frankfurt.", supersedes=[oldest["memory_id"]]
        )
    )
    newest = vault.remember(
        create_args("Moved again", body="Now in Ohio.", supersedes=[middle["memory_id"]])
    )
    found = vault.search({"query": "staging region eu-west-1", "top_k": 5})
    assert ids_of(found) == [newest["memory_id"], middle["memory_id"], oldest["memory_id"]]
    by_id = {h["memory_id"]: h for h in found["selected_hits"]}
    assert by_id[middle["memory_id"]]["superseded_by"] == [newest["memory_id"]]
    assert "superseded_by" not in by_id[newest["memory_id"]]


def test_a_superseded_hit_never_ranks_above_its_live_replacement(vault):
    first = vault.remember(create_args("Wombat count is 3", body="Wombat census. " * 8))
    second = vault.remember(
        create_args(
            "Wombat count is 4", body="Wombat census. " * 6, supersedes=[first["memory_id"]]
        )
    )
    vault.remember(
        create_args("Count is 5", body="Census redone.", supersedes=[second["memory_id"]])
    )
    hits = vault.search({"query": "wombat census", "top_k": 5})["selected_hits"]
    rank = {h["memory_id"]: n for n, h in enumerate(hits)}
    for hit in hits:
        for newer in hit.get("superseded_by", []):
            assert rank[newer] < rank[hit["memory_id"]]


def test_feedback_counts_only_for_queries_like_the_judged_one(vault):
    judged = vault.remember(
        create_args("Wombat burrow notes", body="Wombats dig burrows. Koalas sleep all day.")
    )
    vault.remember(create_args("Wombat burrow facts", body="Wombats dig burrows."))
    found = vault.search({"query": "koalas sleep"})
    assert ids_of(found) == [judged["memory_id"]]
    handle = next(vault.ledger_records("search"))["id"]
    vault.feedback(handle, helpful=[judged["memory_id"]], unhelpful=[])
    # An unrelated query: the judgement says nothing about it.
    hits = vault.search({"query": "wombat burrows"}, explain=True)["selected_hits"]
    assert all("feedback" not in h["score_parts"] for h in hits)
    # The judged query and one close to it are lifted.
    for query in ("koalas sleep", "do koalas sleep all day"):
        again = vault.search({"query": query}, explain=True)["selected_hits"]
        assert again[0]["score_parts"]["feedback"] > 0


def remember_owner(vault, who: str, since: str, until: str | None, body: str) -> str:
    fact = {"subject": who, "predicate": "owns", "object": "billing service", "valid_from": since}
    if until:
        fact["valid_until"] = until
    person = {"n": who, "kind": "person", "is": "an engineer"}
    made = remember_with(vault, f"{who} owns the billing service", body, [person, BILLING], [fact])
    return made["memory_id"]


@pytest.fixture
def owners(vault):
    """Three successive owners of the billing service; the middle one's memory is the wordiest
    (so the weakest text match)."""
    return {
        "ana": remember_owner(vault, "Ana", "2024-01-01", "2024-06-30", "Ana took it over."),
        "bo": remember_owner(
            vault, "Bo", "2024-07-01", "2025-02-28", "Bo took it over. " + "Pager rota. " * 20
        ),
        "cy": remember_owner(vault, "Cy", "2025-03-01", None, "Cy took it over."),
    }


@pytest.mark.parametrize(
    ("query", "who"),
    [
        ("who owned the billing service on 2024-09-15", "bo"),
        ("who owned the billing service in 2024-12", "bo"),
        ("who owned the billing service on 2024-02-29", "ana"),
        ("who owns the billing service on 2026-01-10", "cy"),
    ],
)
def test_a_date_in_the_query_lifts_the_memory_whose_fact_holds_then(vault, owners, query, who):
    hits = vault.search({"query": query, "top_k": 3}, explain=True)["selected_hits"]
    assert hits[0]["memory_id"] == owners[who]
    assert hits[0]["score_parts"]["valid_time"] > 0
    assert all("valid_time" not in h["score_parts"] for h in hits[1:])


def test_without_a_date_or_a_fact_about_the_query_there_is_no_valid_time_boost(vault, owners):
    undated = vault.search({"query": "who owned the billing service"}, explain=True)
    assert all("valid_time" not in h["score_parts"] for h in undated["selected_hits"])
    # The ownership facts hold on that day, but the query asks about something else.
    elsewhere = vault.search({"query": "pager rota on 2024-09-15"}, explain=True)
    assert all("valid_time" not in h["score_parts"] for h in elsewhere["selected_hits"])


def test_words_too_common_to_search_by_still_order_the_best_candidates(vault, monkeypatch):
    from vault_tool.search import candidates

    # As in a large vault: "service" is in most memories, so it is not matched everywhere.
    monkeypatch.setattr(candidates, "COMMON_SHARE", 0.5)
    monkeypatch.setattr(candidates, "COMMON_MINIMUM", 0)
    team = {"n": "platform team", "kind": "team", "is": "the team that runs the platform"}

    def note(title: str, body: str, thing: str) -> str:
        entity = {"n": thing, "kind": "service", "is": f"the {thing}"}
        fact = {"subject": "platform team", "predicate": "runs", "object": thing}
        return remember_with(vault, title, body, [team, entity], [fact])["memory_id"]

    for n, name in enumerate(["search service", "audit service", "geo service", "mail service"]):
        note(f"Notes {n} on the {name}", f"The {name} restarts at night.", name)
    worker = note("Billing worker", "The billing worker retries.", "billing worker")
    story = "The billing service issues invoices, each a long story."
    service = note("Billing service", story, "billing service")
    assert ids_of(vault.search({"query": "billing service", "top_k": 2})) == [service, worker]
