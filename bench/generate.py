"""Generate a seeded, realistic vault of N memories in the vault's own format.

    python bench/generate.py PATH --count 10000 [--seed 7]

A team's decisions, gotchas, procedures, preferences, facts, rules, events and notes about
people and services, with entities and glosses (including people who share a first name),
facts, tags, dates and supersessions. The files are written with the tool's renderer and
committed in one commit, so the vault is ready for `vault-tool reindex`.
"""

from __future__ import annotations

import argparse
import random
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ulid import ULID

from vault_tool.ids import slugify
from vault_tool.memory import Entity, Fact, Memory, render
from vault_tool.store import Store

FIRST = [
    "Ana",
    "Ben",
    "Chen",
    "Dara",
    "Eli",
    "Femi",
    "Gus",
    "Hana",
    "Ivo",
    "Jun",
    "Kai",
    "Lena",
    "Marek",
    "Nia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sam",
    "Tomás",
    "Uma",
    "Vik",
    "Wen",
    "Zoë",
]
ROLES = [
    "backend engineer",
    "product designer",
    "site reliability engineer",
    "data engineer",
    "engineering manager",
    "security engineer",
    "frontend engineer",
    "QA lead",
    "product manager",
    "database administrator",
]
TEAMS = ["platform", "payments", "checkout", "growth", "mobile", "data", "identity", "search"]
SERVICES = [
    "billing service",
    "api gateway",
    "auth service",
    "search service",
    "ledger service",
    "notification service",
    "checkout service",
    "report builder",
    "feature flag service",
    "image resizer",
    "export worker",
    "session store",
]
SERVICE_GLOSS = {
    s: f"the {s} that {v}"
    for s, v in zip(
        SERVICES,
        [
            "issues invoices",
            "routes public traffic",
            "signs tokens for users",
            "indexes the catalogue",
            "records every money movement",
            "sends email and push messages",
            "takes orders and payments",
            "renders monthly reports",
            "toggles features per tenant",
            "resizes uploaded images",
            "exports data for customers",
            "keeps web sessions",
        ],
        strict=True,
    )
}
TOOLS = ["Postgres", "Redis", "Kafka", "Terraform", "Kubernetes", "Envoy", "Grafana", "Sentry"]
REGIONS = ["eu-west-1", "eu-central-1", "us-east-1", "us-west-2", "ap-southeast-1"]
TYPES = ["decision", "gotcha", "procedure", "preference", "fact", "rule", "event", "note"]
VERBS = {
    "decision": ("{s} moves to {t}", "We decided to move {s} to {t}. {why}", "uses"),
    "gotcha": (
        "{s} breaks when {t} restarts",
        "If {t} restarts, {s} {symptom}. {fix}",
        "depends_on",
    ),
    "procedure": ("How to rotate {t} credentials for {s}", "Steps: {steps}", "rotates_with"),
    "preference": (
        "{p} prefers {t} for {s} work",
        "{p} likes using {t} when touching {s}. {why}",
        "prefers",
    ),
    "fact": ("{s} runs in {r}", "{s} is deployed to {r} on {t}. {why}", "runs_in"),
    "rule": (
        "Never deploy {s} without {t} checks",
        "Every deploy of {s} must pass {t} checks. {why}",
        "requires",
    ),
    "event": (
        "{s} outage during {t} upgrade",
        "On the upgrade of {t}, {s} {symptom}. {fix}",
        "affected_by",
    ),
    "note": ("Ideas for {s} and {t}", "Loose ideas: {steps}", "relates_to"),
}
WHY = [
    "It halves the on-call load.",
    "Costs dropped by a third.",
    "Latency p95 improved by 40 ms.",
    "The old setup failed twice in one quarter.",
    "Security review asked for it.",
    "It keeps staging comparable to production.",
]
SYMPTOM = [
    "returns 502s for about a minute",
    "drops queued messages",
    "loses its connection pool",
    "serves stale data",
    "times out health checks",
]
FIX = [
    "Restart it after the upgrade.",
    "Drain traffic first.",
    "Pin the client version.",
    "Add a retry with backoff.",
    "Page the owner before starting.",
]
STEPS = [
    "1. announce in the channel 2. drain traffic 3. rotate 4. verify dashboards",
    "1. open a ticket 2. run the playbook 3. check alerts 4. close the ticket",
]
FILLER = (
    "The details are in the runbook and the incident notes. Ask in the team channel "
    "before changing anything here; the last change needed two rollbacks. "
)


def people(rng: random.Random) -> list[tuple[str, str]]:
    """(name, gloss) of the team; some first names are shared by two people."""
    crew = []
    for i, name in enumerate(FIRST):
        team = TEAMS[i % len(TEAMS)]
        crew.append((name, f"{ROLES[i % len(ROLES)]} on the {team} team"))
        if i % 6 == 0:  # a homonym: same name, another role
            crew.append(
                (name, f"{ROLES[(i + 3) % len(ROLES)]} on the {TEAMS[(i + 3) % len(TEAMS)]} team")
            )
    return crew


def memories(count: int, seed: int) -> list[Memory]:
    """count memories, the same for the same seed."""
    rng = random.Random(seed)
    crew = people(rng)
    start = datetime(2025, 1, 1, tzinfo=UTC)
    made: list[Memory] = []
    for n in range(count):
        kind = TYPES[n % len(TYPES)]
        service = rng.choice(SERVICES)
        tool = rng.choice(TOOLS)
        person, role = rng.choice(crew)
        region = rng.choice(REGIONS)
        created = start + timedelta(minutes=n * 50 + rng.randint(0, 40))
        title_t, body_t, predicate = VERBS[kind]
        fill = {
            "s": service,
            "t": tool,
            "p": person,
            "r": region,
            "why": rng.choice(WHY),
            "symptom": rng.choice(SYMPTOM),
            "fix": rng.choice(FIX),
            "steps": rng.choice(STEPS),
        }
        title = title_t.format(**fill)
        title = title[0].upper() + title[1:] + f" ({n})"
        filler = FILLER * rng.randint(1, 3)
        body = f"# {title}\n\n{body_t.format(**fill)}\n\n{person} ({role}) noted it. {filler}\n"
        entities = [
            Entity(service, "service", SERVICE_GLOSS[service]),
            Entity(person, "person", role),
        ]
        obj = region if kind == "fact" else tool
        entities.append(
            Entity(
                obj,
                "place" if kind == "fact" else "tool",
                f"AWS region {obj}" if kind == "fact" else f"the {obj} we run",
            )
        )
        subject = person if kind == "preference" else service
        facts = [Fact(subject, predicate, obj), Fact(person, "knows_about", service)]
        supersedes: tuple[str, ...] = ()
        if made and n % 25 == 0:  # a newer memory replaces an older one of the same type
            older = made[rng.randrange(max(0, len(made) - 200), len(made))]
            supersedes = (older.id,) if older.memory_type == kind and older.id else ()
        stamp = created.strftime("%Y-%m-%dT%H:%M:%SZ")
        made.append(
            Memory(
                id=str(ULID.from_datetime(created)),
                memory_type=kind,
                title=title,
                body=body,
                entities=tuple(entities),
                facts=tuple(facts),
                tags=tuple(dict.fromkeys((service.split()[0], kind, TEAMS[n % len(TEAMS)]))),
                supersedes=supersedes,
                source="generator",
                created=stamp,
                updated=stamp,
            )
        )
    return made


def write_vault(path: Path, count: int, seed: int) -> list[Memory]:
    """Create a vault at path holding count generated memories in one commit."""
    store = Store.init(path)
    made = memories(count, seed)
    taken: set[str] = set()
    for memory in made:
        folder = f"{memory.memory_type}/{memory.created[:7]}"
        stem = slugify(memory.title)
        rel = (
            f"{folder}/{stem}.md"
            if f"{folder}/{stem}" not in taken
            else f"{folder}/{stem}-{memory.id[-6:].lower()}.md"
        )
        taken.add(rel[:-3])
        target = path / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(render(memory), encoding="utf-8")
    store.close()
    for args in (
        ["add", "--all", "--", *sorted(set(m.memory_type for m in made))],
        ["commit", "--quiet", "-m", f"Import {count} memories from bench/generate.py"],
        ["commit-graph", "write", "--reachable", "--changed-paths"],
    ):
        subprocess.run(["git", *args], cwd=path, check=True)
    return made


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("path", type=Path)
    parser.add_argument("--count", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    write_vault(args.path, args.count, args.seed)
    print(f"wrote {args.count} memories to {args.path}")


if __name__ == "__main__":
    main()
