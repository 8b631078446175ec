"""Ranking signals over a real vault: word forms, body words, ended facts, named times."""

from __future__ import annotations

from datetime import UTC, datetime

from vault_tool.core.spoken_dates import named_time

PERSON = {"n": "Ana", "kind": "person", "is": "backend engineer on the platform team"}


def remember(vault, title: str, body: str, entities=None, facts=None, tags=()) -> str:
    entities = entities or [PERSON]
    facts = facts or [{"subject": "Ana", "predicate": "wrote", "object": "Ana"}]
    made = vault.remember(
        {
            "mode": "create",
            "content_md": f"# {title}\n\n{body}\n",
            "semantic_delta": {
                "memory_type": "note",
                "title": title,
                "entities": entities,
                "facts": facts,
                "tags": list(tags),
            },
        }
    )
    return made["memory_id"]


def titles(vault, query: str) -> list[str]:
    return [h["title"] for h in vault.search({"query": query})["selected_hits"]]


def test_owner_finds_who_owns(vault):
    service = {"n": "billing service", "kind": "service", "is": "issues invoices"}
    remember(
        vault,
        "Ana owns the billing service",
        "She took it over in June.",
        [PERSON, service],
        [{"subject": "Ana", "predicate": "owns", "object": "billing service"}],
    )
    for n in range(4):
        remember(vault, f"Billing note {n}", f"The billing queue backed up, billing retried {n}.")
    assert titles(vault, "billing owner")[0] == "Ana owns the billing service"


def test_a_body_holding_every_word_beats_one_title_word_restated_by_facts(vault):
    filler = " ".join(f"word{n}" for n in range(20))
    remember(vault, "Harbour notes", f"The lighthouse {filler} keeper left.")
    for n in range(3):
        remember(vault, f"Gate {n}", f"The gate keeper {n} locked up.")
    for n in range(3):
        # A title word declared as an entity, glossed, and restated by three facts.
        topic = {"n": f"Lighthouse {n}", "kind": "topic", "is": f"lighthouse {n}"}
        tags = [f"t{n}a", f"t{n}b", f"t{n}c"]
        remember(
            vault,
            f"Lighthouse {n}",
            "Paint and repairs.",
            [topic, *({"n": t, "kind": "tag", "is": f"tag {t}"} for t in tags)],
            [{"subject": topic["n"], "predicate": "tagged", "object": t} for t in tags],
            tags,
        )
    assert titles(vault, "lighthouse keeper")[0] == "Harbour notes"


def rotation(vault, who: str, start: str, until: str) -> None:
    lead = {"n": who, "kind": "person", "is": "engineer on the platform team"}
    process = {"n": "on-call rotation", "kind": "process", "is": "the weekly pager rotation"}
    fact = {"subject": who, "predicate": "leads", "object": "on-call rotation"}
    remember(
        vault,
        f"{who} leads the on-call rotation",
        f"{who} is the on-call lead and approves swaps.",
        [lead, process],
        [{**fact, "valid_from": start, "valid_until": until}],
    )


def test_a_question_about_now_puts_the_current_lead_above_the_ended_one(vault):
    today = datetime.now(UTC).date()
    # (Ada's path sorts first: equal scores would put her first)
    rotation(vault, "Ada", "2020-01-01", "2020-03-31")
    rotation(vault, "Jose", "2020-04-01", (today.replace(year=today.year + 1)).isoformat())
    assert titles(vault, "on-call lead now")[0] == "Jose leads the on-call rotation"
    assert titles(vault, "who is the on-call lead")[0] == "Jose leads the on-call rotation"
    # On a day it names, the fact valid then is lifted instead.
    assert titles(vault, "on-call lead 2020-02-10")[0] == "Ada leads the on-call rotation"


def test_a_month_said_by_name_lifts_the_fact_valid_then(vault):
    today = datetime.now(UTC).date()
    august = named_time("in August", today).dates[0]  # the latest August
    rotation(vault, "Marek", f"{august}-01", f"{august}-31")
    rotation(vault, "Jose", f"{august[:4]}-01-01", f"{august[:4]}-01-31")
    assert titles(vault, "who led the on-call rotation in August")[0] == (
        "Marek leads the on-call rotation"
    )


def test_named_days_lift_memories_made_then(vault, vault_path):
    # A person's note from long ago (its path sorts first: equal scores would put it first).
    note = vault_path / "a" / "standup-at-nine.md"
    note.parent.mkdir()
    note.write_text(
        "---\nmemory_type: note\ntitle: Standup at nine\nentities:\n"
        f"  - n: Ana\n    kind: person\n    is: {PERSON['is']}\n"
        "facts:\n  - subject: Ana\n    predicate: wrote\n    object: Ana\n"
        "created: 2020-01-06\n---\n# Standup at nine\n\nAna said the standup moves to ten.\n"
    )
    vault.take_in_offline_changes()
    remember(vault, "Standup at ten", "Ana said the standup moves to ten.")  # made today
    hits = vault.search({"query": "what did Ana say about the standup today"})["selected_hits"]
    assert [h["title"] for h in hits] == ["Standup at ten", "Standup at nine"]


def test_what_a_person_said_later_on_the_same_thing_comes_first(vault):
    setup = {"n": "Ana's setup", "kind": "preference", "is": "Ana's desk and tools"}

    def said(title: str, body: str, day: str) -> None:
        fact = {"subject": "Ana", "predicate": "said", "object": "Ana's setup", "valid_from": day}
        vault.remember(
            {
                "mode": "create",
                "content_md": f"# {title}\n\n{body}\n",
                "semantic_delta": {
                    "memory_type": "preference",
                    "title": title,
                    "entities": [PERSON, setup],
                    "facts": [fact],
                },
            }
        )

    # (the older one's path sorts first: equal scores would put it first)
    said("Ana a keyboard", "Ana types on a low-profile mechanical keyboard.", "2026-08-18")
    said("Ana b keyboard", "Ana types on a tiny forty percent keyboard now.", "2026-11-24")
    found = titles(vault, "what keyboard does Ana type on")
    assert found[:2] == ["Ana b keyboard", "Ana a keyboard"]  # placed above, not lowered


def test_entities_every_memory_shares_do_not_put_the_vault_newest_first(vault):
    from vault_tool.search.features import SAID_AGAIN_MENTIONS

    generic = [PERSON, {"n": "Notebook", "kind": "project", "is": "where notes are kept"}]

    def items(days: list[str]) -> list[dict]:
        return [
            {
                "content_md": f"# Note {day}\n\nPlain words {day}.\n",
                "semantic_delta": {
                    "memory_type": "note",
                    "title": f"Note {day}",
                    "entities": generic,
                    "facts": [
                        {
                            "subject": "Ana",
                            "predicate": "keeps",
                            "object": "Notebook",
                            "valid_from": day,
                        }
                    ],
                },
            }
            for day in days
        ]

    days = [f"2026-0{1 + n // 28}-{1 + n % 28:02d}" for n in range(SAID_AGAIN_MENTIONS + 1)]
    for start in range(0, len(days), 20):
        vault.remember({"mode": "create", "items": items(days[start : start + 20])})
    # The older note says the query's word more often: with entities this common, it
    # stays first (a later one about rarer entities would be placed above it).
    old = {"subject": "Ana", "predicate": "keeps", "object": "Notebook", "valid_from": "2020-01-01"}
    remember(vault, "Lantern a", "lantern lantern lantern", generic, [old])
    remember(vault, "Lantern b", "lantern lantern", generic)
    assert titles(vault, "lantern")[:2] == ["Lantern a", "Lantern b"]


def test_a_name_said_in_full_finds_that_person_not_a_namesake(vault):
    costa = {"n": "Ana Costa", "kind": "person", "is": "product designer on the growth team"}
    ruiz = {"n": "Ana Ruiz", "kind": "person", "is": "backend engineer"}
    rica = {"n": "Costa Rica", "kind": "place", "is": "Costa Rica"}
    moves = {"subject": "Ana Costa", "predicate": "moves_to", "object": "Ana Costa"}
    remember(vault, "Moving north", "Ana Costa moves to Bologna.", [costa], [moves])
    # The namesake's memory holds every word of the query, and more often: the words alone
    # would put it first.
    remember(
        vault,
        "Ana's move to Costa Rica",
        "Ana Ruiz: the move to Costa Rica, the big move, Ana moves.",
        [ruiz, rica],
        [{"subject": "Ana Ruiz", "predicate": "moves_to", "object": "Costa Rica"}],
    )
    assert titles(vault, "where does Ana Costa move")[0] == "Moving north"


def test_a_query_found_only_by_a_related_form_of_its_word(vault):
    # "owner" is in no memory; "owns" is: the form alone finds it (and nothing divides by
    # the zero words the vault holds of the query).
    service = {"n": "billing service", "kind": "service", "is": "issues invoices"}
    fact = {"subject": "Ana", "predicate": "owns", "object": "billing service"}
    remember(vault, "Ana and billing", "She took it over.", [PERSON, service], [fact])
    assert titles(vault, "owner") == ["Ana and billing"]
    assert titles(vault, "ownership") == ["Ana and billing"]


def test_a_question_naming_someone_ranks_what_they_said_above_what_was_said_to_them(vault):
    ana = {"n": "Ana", "kind": "person", "is": "one of the two people talking"}
    ben = {"n": "Ben", "kind": "person", "is": "one of the two people talking"}

    def turn(speaker: str, other: str, text: str) -> str:
        people = [ana, ben] if speaker == "Ana" else [ben, ana]
        said = [{"subject": speaker, "predicate": "talked_with", "object": other}]
        return remember(vault, f"{speaker}, 2024-05-02", f"**{speaker}:** {text}", people, said)

    # Ben's turn repeats the question's words more often; Ana's is the answer.
    turn("Ben", "Ana", "Ana, how was the pottery class? The pottery class near the harbour?")
    answer = turn("Ana", "Ben", "The pottery class was lovely, I made a bowl.")
    hits = vault.search({"query": "What did Ana make at the pottery class?"})["selected_hits"]
    assert hits[0]["memory_id"] == answer


def test_about_someone_named_matches_a_subject_as_whole_words():
    from vault_tool.search.features import about_someone_named, words_of

    facts = [{"subject": "Ana Costa", "predicate": "owns", "object": "billing"}]
    assert about_someone_named(facts, f" {words_of('what does Ana Costa own?')} ")
    assert not about_someone_named(facts, f" {words_of('what does Ana own?')} ")
    assert not about_someone_named([{"subject": "Ana"}], f" {words_of('Anakin owns it')} ")


def test_chinese_japanese_and_korean_words_are_found_inside_their_sentences(vault):
    japanese = remember(vault, "出張メモ", "私は来週東京に行きます。田中さんと会議があります。")
    korean = remember(vault, "회의 메모", "서울사무소에서 다음주에 만나요.")
    remember(vault, "Trip notes", "Next week I fly to Osaka for the vendor meeting.")
    for query, wanted in (("東京", japanese), ("田中さん", japanese), ("서울", korean)):
        hits = vault.search({"query": query})["selected_hits"]
        assert hits and hits[0]["memory_id"] == wanted, query
    assert titles(vault, "vendor meeting Osaka") == ["Trip notes"]


def test_a_reply_is_found_by_the_words_of_the_turn_it_answers(vault):
    ana = {"n": "Ana", "kind": "person", "is": "one of the two people talking"}
    ben = {"n": "Ben", "kind": "person", "is": "one of the two people talking"}

    def item(speaker: str, text: str) -> dict:
        people = [ana, ben] if speaker == "Ana" else [ben, ana]
        other = "Ben" if speaker == "Ana" else "Ana"
        title = f"{speaker}, 2024-05-02"
        return {
            "content_md": f"# {title}\n\n**{speaker}:** {text}\n",
            "semantic_delta": {
                "memory_type": "note",
                "title": title,
                "entities": people,
                "facts": [{"subject": speaker, "predicate": "talked_with", "object": other}],
                "tags": [],
            },
        }

    for n, text in enumerate(["I started pottery.", "My sister visited.", "Work is busy."]):
        vault.remember({"mode": "create", **item("Ana", f"{text} ({n})")})
    made = vault.remember(
        {
            "mode": "create",
            "items": [
                item("Ben", "Do you still take the dog to the park?"),
                item("Ana", "Yeah, a few times a week, before breakfast."),
                item("Ben", "Nice, say hi from me."),
            ],
        }
    )
    reply = made["results"][1]["memory_id"]
    hits = vault.search({"query": "How often does Ana take the dog to the park?"})["selected_hits"]
    assert reply in [h["memory_id"] for h in hits[:2]]
    # An answer two items after the question (a word of its own between): it borrows too.
    later = vault.remember(
        {
            "mode": "create",
            "items": [
                item("Ben", "Are you still going to the climbing gym?"),
                item("Ana", "Oh, good question!"),
                item("Ana", "Twice a month now, on Sundays."),
                item("Ben", "Cool."),
            ],
        }
    )
    answer = later["results"][2]["memory_id"]
    asked = {"query": "how often does Ana go to the climbing gym", "top_k": 3}
    assert answer in [h["memory_id"] for h in vault.search(asked)["selected_hits"]]


def test_ids_minted_one_after_another_sort_in_that_order():
    from vault_tool.core.ids import new_id

    minted = [new_id() for _ in range(2000)]
    assert minted == sorted(minted) and len(set(minted)) == len(minted)


def test_right_now_asks_about_now_without_matching_right(vault):
    today = datetime.now(UTC).date()
    rotation(vault, "Ada", "2020-01-01", "2020-03-31")
    rotation(vault, "Jose", "2020-04-01", (today.replace(year=today.year + 1)).isoformat())
    # A memory saying "right" would be matched by it, were it a word of the query.
    remember(vault, "Ada's handover notes", "Ada handed the on-call rotation over right away.")
    for asked in ("who is on call right now", "who is on call at the moment", "on call currently"):
        assert titles(vault, asked)[0] == "Jose leads the on-call rotation", asked


def decided(vault, memory_type: str, title: str, body: str) -> None:
    staging = {"n": "staging", "kind": "system", "is": "the shared staging cluster"}
    vault.remember(
        {
            "mode": "create",
            "content_md": f"# {title}\n\n{body}\n",
            "semantic_delta": {
                "memory_type": memory_type,
                "title": title,
                "entities": [staging],
                "facts": [{"subject": "staging", "predicate": "noted_in", "object": "staging"}],
            },
        }
    )


def test_what_did_we_decide_puts_the_decision_above_a_note_that_says_decided(vault):
    decided(vault, "note", "Staging notes", "Nothing decided yet about staging; decide next week.")
    decided(vault, "decision", "Staging resets nightly", "Staging is reset every night at two.")
    decided(vault, "note", "Staging load test", "The staging load test ran on Monday.")
    assert titles(vault, "what did we decide about staging?")[0] == "Staging resets nightly"
    # A question that asks for no kind of memory ranks by its words alone.
    assert titles(vault, "staging yet")[0] == "Staging notes"


def test_a_question_about_what_no_memory_names_has_nothing_relevant(vault):
    decided(vault, "decision", "Staging resets nightly", "We decided: staging resets at two.")
    decided(vault, "note", "Deploy freeze", "We decided on a deploy freeze in December.")
    decided(vault, "note", "Billing service rota", "Ana and Bo take turns on the service.")
    asking = ("what did we decide about GraphQL", "rotate Nomad credentials for payroll service")
    for asked in asking:
        found = vault.search({"query": asked})  # (the second: "service" is in a memory)
        assert found["selected_hits"] == [] and found["total_matches"] == 0, asked
        assert found["reason"] == "nothing_relevant"
    # The words a memory holds still find it, however few of the vault's memories hold them.
    assert titles(vault, "what did we decide about the deploy freeze")[0] == "Deploy freeze"
    assert titles(vault, "staging GraphQL resets")[0] == "Staging resets nightly"


def test_an_irregular_form_finds_its_base(vault):
    remember(vault, "Pottery class", "The pottery class moved to Friday; pottery class fees rose.")
    remember(vault, "Ana and the pottery class", "Ana taught the pottery class last spring.")
    assert titles(vault, "who teaches the pottery class")[0] == "Ana and the pottery class"
