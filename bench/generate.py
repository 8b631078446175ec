"""Generate a seeded, realistic vault of N memories in the vault's own format.

    python -m bench.generate PATH --count 10000 [--seed 7]

A team's memories over about three years, drawn from one consistent world: services with
an owner, a region and a datastore; people with a role on a team (some share a first name
and are told apart only by their gloss); tools. Decisions, gotchas, procedures,
preferences, rules, events and notes talk about them. The world changes as time passes:
a service moves region or datastore (the newer memory `supersedes` the older one) and
changes owner (the ownership facts carry `valid_from` / `valid_until`). The same count and
seed give the same vault, ids included; `build` also returns the registry of what each
memory states, from which bench/questions.py draws questions with known answers.
The files are written with the tool's renderer and committed in one commit.
"""

from __future__ import annotations

import argparse
import random
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

from ulid import ULID

from vault_tool.core.entities import compatible
from vault_tool.core.ids import slugify
from vault_tool.core.memory import Entity, Fact, Memory, render
from vault_tool.storage.store import Store

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
    "Aiko",
    "Bruno",
    "Carla",
    "Dmitri",
    "Esra",
    "Farid",
    "Greta",
    "Hugo",
    "Ines",
    "Jonas",
    "Kemal",
    "Lucia",
    "Mateo",
    "Noor",
    "Olga",
    "Pavel",
    "Rania",
    "Sven",
    "Talia",
    "Ugo",
    "Vera",
    "Wiktor",
    "Xena",
    "Yusuf",
    "Zara",
    "Amir",
    "Bea",
    "Ciro",
    "Dalia",
    "Emil",
    "Fiona",
    "Goran",
    "Helga",
    "Idris",
    "Jana",
    "Kofi",
    "Lior",
    "Mina",
    "Nils",
    "Oona",
    "Pia",
    "Rafa",
    "Sofia",
    "Theo",
    "Ulla",
    "Viggo",
    "Yara",
    "Zeno",
    "Abel",
    "Berit",
    "Cosmo",
    "Dina",
    "Enzo",
    "Frida",
    "Gemma",
    "Hamid",
    "Iris",
    "Joel",
    "Kira",
    "Leon",
    "Maya",
    "Nico",
    "Orla",
    "Paulo",
    "Rhea",
    "Silas",
    "Tara",
    "Ulf",
    "Vita",
    "Willa",
    "Yoav",
    "Zuri",
]
ROLES = (
    "backend engineer",
    "product designer",
    "site reliability engineer",
    "data analyst",
    "engineering manager",
    "security engineer",
    "frontend developer",
    "QA lead",
    "product manager",
    "database administrator",
    "mobile developer",
    "technical writer",
)
TEAMS = [
    "platform",
    "payments",
    "checkout",
    "growth",
    "mobile",
    "data",
    "identity",
    "search",
    "logistics",
    "support",
    "marketplace",
    "infrastructure",
]
# (domain, what its services do); a service is "<domain> <component>".
DOMAINS = (
    ("billing", "issues invoices"),
    ("payments", "captures card payments"),
    ("checkout", "takes orders"),
    ("catalog", "holds the product catalogue"),
    ("search", "indexes the catalogue"),
    ("shipping", "books couriers"),
    ("inventory", "counts stock in warehouses"),
    ("pricing", "computes prices and discounts"),
    ("loyalty", "tracks reward points"),
    ("fraud", "scores risky orders"),
    ("identity", "signs tokens for users"),
    ("session", "keeps web sessions"),
    ("notification", "sends email and push messages"),
    ("reporting", "renders monthly reports"),
    ("export", "exports data for customers"),
    ("media", "resizes uploaded images"),
    ("audit", "keeps the audit trail"),
    ("ledger", "records every money movement"),
    ("tax", "computes sales tax"),
    ("refund", "pays money back"),
    ("subscription", "renews plans every month"),
    ("onboarding", "walks new users through setup"),
    ("chat", "runs customer chat"),
    ("recommendation", "suggests products"),
    ("analytics", "aggregates usage events"),
    ("metrics", "collects service metrics"),
    ("scheduler", "runs timed jobs"),
    ("webhook", "calls partner endpoints"),
    ("geo", "looks up addresses"),
    ("translation", "translates product text"),
    ("sms", "sends text messages"),
    ("backup", "copies databases offsite"),
    ("review", "collects product reviews"),
    ("coupon", "validates coupon codes"),
    ("warranty", "handles warranty claims"),
    ("invoice", "stores invoice PDFs"),
    ("consent", "records privacy consent"),
    ("routing", "routes public traffic"),
    ("ranking", "orders search results"),
    ("feature flag", "toggles features per tenant"),
)
COMPONENTS = (
    ("service", ""),
    ("worker", " in the background"),
    ("api", " for partners"),
    ("gateway", " at the edge"),
    ("pipeline", " in nightly batches"),
    ("dashboard", " for the support staff"),
    ("sync", " between regions"),
    ("cache", " close to the users"),
    ("scheduler", " on a timer"),
    ("proxy", " for internal callers"),
)
TOOLS = [
    "Postgres",
    "Redis",
    "Kafka",
    "Terraform",
    "Kubernetes",
    "Envoy",
    "Grafana",
    "Sentry",
    "Elasticsearch",
    "MySQL",
    "DynamoDB",
    "Vault",
    "Nginx",
    "Prometheus",
    "Celery",
    "Airflow",
    "Spark",
    "Jenkins",
    "ArgoCD",
    "Memcached",
    "Cloudflare",
    "Datadog",
    "PagerDuty",
    "Snowflake",
]
DATASTORES = ("Postgres", "Redis", "MySQL", "DynamoDB", "Elasticsearch", "Snowflake")
REGIONS = [
    "eu-west-1",
    "eu-central-1",
    "eu-north-1",
    "us-east-1",
    "us-east-2",
    "us-west-2",
    "ap-southeast-1",
    "ap-northeast-1",
    "sa-east-1",
    "ca-central-1",
]
# Never used in a vault: abstention questions ask about these.
UNKNOWN_DOMAINS = [
    "payroll",
    "warehouse",
    "telemetry",
    "karaoke",
    "parking",
    "cafeteria",
    "badge",
    "mailroom",
    "lottery",
    "podcast",
    "weather",
    "horoscope",
]
UNKNOWN_TOOLS = [
    "Cassandra",
    "Nomad",
    "Consul",
    "RabbitMQ",
    "ClickHouse",
    "Pulsar",
    "CockroachDB",
    "Zookeeper",
    "Splunk",
    "Jaeger",
    "Istio",
    "Vitess",
]

WHY = (
    "It halves the on-call load.",
    "Costs dropped by a third after the change.",
    "Latency p95 improved by about 40 ms.",
    "The old setup failed twice in one quarter.",
    "The security review asked for it.",
    "It keeps staging comparable to production.",
    "The vendor contract ends next year.",
    "Nobody on the team knew the old stack any more.",
    "Support tickets about timeouts went away.",
    "It was the cheapest option that met the SLA.",
)
SYMPTOM = (
    "returns 502s for about a minute",
    "drops queued messages",
    "loses its connection pool",
    "serves stale data",
    "times out health checks",
    "double-sends some requests",
    "fills its disk with retries",
    "stops consuming until restarted",
)
FIX = (
    "Restart it after the upgrade.",
    "Drain traffic first.",
    "Pin the client version.",
    "Add a retry with backoff.",
    "Page the owner before starting.",
    "Scale it to three replicas beforehand.",
    "Flush the queue and replay from the last offset.",
)
STEPS = (
    "1. announce it in the team channel 2. drain traffic 3. rotate 4. verify the dashboards",
    "1. open a change ticket 2. run the playbook 3. watch the alerts 4. close the ticket",
    "1. create the new secret 2. deploy with both secrets valid 3. revoke the old one",
    "1. pause the consumers 2. rotate 3. resume them one by one 4. compare error rates",
)
CHATTER = (
    "The details are in the runbook and the incident notes.",
    "Ask in the team channel before changing anything here.",
    "The last change needed two rollbacks.",
    "We agreed to revisit this after the next quarterly planning.",
    "Staging behaves the same way, so try it there first.",
    "There is a dashboard for this under the service folder.",
    "This came up again during the last on-call handover.",
    "Write down anything surprising in the postmortem doc.",
    "It took most of an afternoon to figure out the first time.",
    "The alert thresholds were tuned for this in the spring.",
    "Customers noticed within minutes, so move quickly.",
    "Keep the change small and deploy it on a weekday morning.",
)
TOPICS = (
    "the quarterly roadmap",
    "on-call rotation changes",
    "the incident review",
    "hiring for the next half",
    "the migration plan",
    "cost savings on cloud spend",
    "the accessibility audit",
    "the deprecation of old endpoints",
)


@dataclass(frozen=True)
class Person:
    """A teammate: a first name and the gloss that tells them apart."""

    name: str
    role: str
    team: str

    @property
    def gloss(self) -> str:
        return f"{self.role} on the {self.team} team"


@dataclass(frozen=True)
class Service:
    """A service of the team's system."""

    name: str
    gloss: str
    domain: str
    team: str


@dataclass
class Corpus:
    """Generated memories and the registry of what each one states (for questions)."""

    memories: list[Memory]
    people: list[Person]
    services: list[Service]
    # (kind, *parts) -> ids of memories stating it; see the _note calls in build().
    registry: dict[tuple, list[str]] = field(default_factory=dict)
    # service -> [(memory id, person index, valid_from, valid_until or None)], oldest first.
    owners: dict[str, list[tuple[str, int, str, str | None]]] = field(default_factory=dict)
    # service -> ids of its region memories, oldest first (each supersedes the one before).
    regions: dict[str, list[str]] = field(default_factory=dict)
    # service -> ids of its datastore decisions, oldest first (each supersedes the one before).
    datastores: dict[str, list[str]] = field(default_factory=dict)
    # (name, [person index, ...]) for first names that two people share.
    homonyms: list[tuple[str, list[int]]] = field(default_factory=list)


def roster(count: int, rng: random.Random) -> list[Person]:
    """The team, larger for larger vaults; every fifth name is shared by a second person."""
    size = max(20, min(len(FIRST), count // 40))
    crew = []
    for i, name in enumerate(FIRST[:size]):
        person = Person(name, ROLES[i % len(ROLES)], TEAMS[i % len(TEAMS)])
        crew.append(person)
        if i % 5 == 0:  # a homonym whose gloss shares too few words to be the same person
            for shift in range(1, len(ROLES)):
                twin = Person(
                    name, ROLES[(i + shift) % len(ROLES)], TEAMS[(i + 2 * shift) % len(TEAMS)]
                )
                if not compatible(person.gloss, twin.gloss):
                    crew.append(twin)
                    break
    rng.shuffle(crew)
    return crew


def catalogue(count: int, rng: random.Random) -> list[Service]:
    """The services, larger for larger vaults (12 at 1k, ~170 at 10k, 400 at 100k)."""
    size = max(12, min(len(DOMAINS) * len(COMPONENTS), count // 60))
    pairs = [(d, c) for c in COMPONENTS for d in DOMAINS]
    # Main services first ("billing service"), then the rest in a seeded order.
    head, rest = pairs[: len(DOMAINS)], pairs[len(DOMAINS) :]
    rng.shuffle(head)
    rng.shuffle(rest)
    chosen = (head + rest)[:size]
    return [
        Service(
            name=f"{domain} {component}",
            gloss=f"the {domain} {component} that {does}{where}",
            domain=domain.split()[0],
            team=TEAMS[i % len(TEAMS)],
        )
        for i, ((domain, does), (component, where)) in enumerate(chosen)
    ]


class _Clock:
    """Creation times spread over at most three years, in order."""

    def __init__(self, count: int, rng: random.Random) -> None:
        self.start = datetime(2023, 6, 1, tzinfo=UTC)
        self.step = min(timedelta(minutes=50), timedelta(days=3 * 365) / max(count, 1))
        self.rng = rng

    def at(self, n: int) -> datetime:
        jitter = self.rng.random() * self.step.total_seconds() * 0.8
        return self.start + self.step * n + timedelta(seconds=int(jitter))


def _ulid(moment: datetime, rng: random.Random) -> str:
    """A ULID for that moment whose random part comes from the seeded generator."""
    ms = int(moment.timestamp() * 1000)
    return str(ULID.from_bytes(ms.to_bytes(6, "big") + rng.randbytes(10)))


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _day(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%d")


def build(count: int, seed: int) -> Corpus:
    """count memories and their registry, the same for the same count and seed."""
    rng = random.Random(seed)
    crew = roster(count, rng)
    services = catalogue(count, rng)
    corpus = Corpus([], crew, services)
    by_name: dict[str, list[int]] = {}
    for i, person in enumerate(crew):
        by_name.setdefault(person.name, []).append(i)
    corpus.homonyms = [(name, idx) for name, idx in by_name.items() if len(idx) > 1]
    clock = _Clock(count, rng)
    writer = _Writer(corpus, rng)
    current_owner: dict[str, int] = {}
    current_region: dict[str, str] = {}
    current_store: dict[str, str] = {}

    # Homonym pairs get preferences about the same service: the hard case for glosses.
    planted: list[tuple[int, int, Service]] = []
    for _, idx in corpus.homonyms:
        for _ in range(max(1, count // 2000)):
            planted.append((idx[0], idx[1], rng.choice(services)))

    n = 0
    while n < count:
        moment = clock.at(n)
        service = services[n % len(services)] if n < 3 * len(services) else rng.choice(services)
        if n < 3 * len(services):  # the world as it starts: region, owner, datastore
            kind = ("region", "owner", "datastore")[n // len(services)]
        elif planted and n % 9 == 4:
            first, second, service = planted.pop()
            writer.preference(moment, crew[first], first, service, rng.choice(TOOLS))
            n += 1
            if n < count:
                writer.preference(clock.at(n), crew[second], second, service, rng.choice(TOOLS))
                n += 1
            continue
        else:
            kind = rng.choices(
                (
                    "region",
                    "owner",
                    "datastore",
                    "gotcha",
                    "procedure",
                    "preference",
                    "rule",
                    "event",
                    "decision",
                    "note",
                ),
                weights=(2, 3, 2, 15, 12, 13, 10, 12, 10, 14),
            )[0]
        if kind == "region":
            old = current_region.get(service.name)
            new = rng.choice([r for r in REGIONS if r != old])
            writer.region(moment, service, old, new)
            current_region[service.name] = new
        elif kind == "owner":
            old_owner = current_owner.get(service.name)
            choices = [i for i in range(len(crew)) if i != old_owner]
            new_owner = rng.choice(choices)
            writer.owner(moment, service, crew, new_owner)
            current_owner[service.name] = new_owner
        elif kind == "datastore":
            old_store = current_store.get(service.name)
            store = rng.choice([d for d in DATASTORES if d != old_store])
            writer.datastore(moment, service, old_store, store)
            current_store[service.name] = store
        elif kind == "preference":
            who = rng.randrange(len(crew))
            writer.preference(moment, crew[who], who, service, rng.choice(TOOLS))
        elif kind == "note":
            writer.note(moment, service, rng.sample(range(len(crew)), 3), crew)
        else:
            who = rng.randrange(len(crew))
            writer.about_tool(kind, moment, service, rng.choice(TOOLS), crew[who])
        n += 1
    writer.close_ownerships()
    return corpus


class _Writer:
    """Makes the memories of build() and notes what each one states."""

    def __init__(self, corpus: Corpus, rng: random.Random) -> None:
        self.corpus = corpus
        self.rng = rng

    def _note(self, key: tuple, memory_id: str) -> None:
        self.corpus.registry.setdefault(key, []).append(memory_id)

    def _chatter(self, low: int = 1, high: int = 4) -> str:
        return " ".join(self.rng.sample(CHATTER, self.rng.randint(low, high)))

    def _add(
        self,
        moment: datetime,
        memory_type: str,
        title: str,
        body: str,
        entities: list[Entity],
        facts: list[Fact],
        tags: list[str],
        supersedes: tuple[str, ...] = (),
    ) -> str:
        memory_id = _ulid(moment, self.rng)
        stamp = _stamp(moment)
        title = title[0].upper() + title[1:]
        self.corpus.memories.append(
            Memory(
                id=memory_id,
                memory_type=memory_type,
                title=title,
                body=f"# {title}\n\n{body}\n",
                entities=tuple(dict.fromkeys(entities)),
                facts=tuple(facts),
                tags=tuple(dict.fromkeys(t.replace(" ", "-") for t in tags)),
                supersedes=supersedes,
                source="generator",
                created=stamp,
                updated=stamp,
            )
        )
        return memory_id

    @staticmethod
    def _service(service: Service) -> Entity:
        return Entity(service.name, "service", service.gloss)

    @staticmethod
    def _person(person: Person) -> Entity:
        return Entity(person.name, "person", person.gloss)

    @staticmethod
    def _tool(tool: str) -> Entity:
        kind = "database" if tool in DATASTORES else "tool"
        return Entity(tool, kind, f"the {tool} we run")

    def region(self, moment: datetime, service: Service, old: str | None, new: str) -> None:
        chain = self.corpus.regions.setdefault(service.name, [])
        place = Entity(new, "region", f"the AWS region {new}")
        fact = Fact(service.name, "runs_in", new, valid_from=_day(moment) if old else None)
        if old is None:
            title = f"{service.name} runs in {new}"
            body = (
                f"The {service.name} is deployed to {new}. {self.rng.choice(WHY)} {self._chatter()}"
            )
        else:
            title = f"{service.name} moved from {old} to {new}"
            body = (
                f"Since {_day(moment)} the {service.name} runs in {new}; it ran in {old} "
                f"before. {self.rng.choice(WHY)} {self._chatter()}"
            )
        memory_id = self._add(
            moment,
            "fact",
            title,
            body,
            [self._service(service), place],
            [fact],
            [service.domain, "region", service.team],
            supersedes=tuple(chain[-1:]),
        )
        chain.append(memory_id)

    def owner(self, moment: datetime, service: Service, crew: list[Person], who: int) -> None:
        chain = self.corpus.owners.setdefault(service.name, [])
        person = crew[who]
        since = _day(moment)
        if chain:  # the previous owner's memory gets its end date (as a person would add)
            old_id, old_who, old_from, _ = chain[-1]
            until = _day(moment - timedelta(days=1))
            chain[-1] = (old_id, old_who, old_from, until)
        body = (
            f"{person.name} ({person.gloss}) owns the {service.name} from {since}. "
            f"Questions about it go to {person.name} first. {self._chatter()}"
        )
        memory_id = self._add(
            moment,
            "fact",
            f"{person.name} owns the {service.name}",
            body,
            [self._person(person), self._service(service)],
            [Fact(person.name, "owns", service.name, valid_from=since)],
            [service.domain, "ownership", person.team],
        )
        chain.append((memory_id, who, since, None))

    def close_ownerships(self) -> None:
        """Write the valid_until of every ownership that ended into its memory."""
        ended = {
            memory_id: until
            for chain in self.corpus.owners.values()
            for memory_id, _, _, until in chain
            if until
        }
        for i, memory in enumerate(self.corpus.memories):
            until = ended.get(memory.id or "")
            if until is None:
                continue
            fact = replace(memory.facts[0], valid_until=until)
            body = memory.body.rstrip("\n") + f"\n\nUntil {until}; then it changed hands.\n"
            self.corpus.memories[i] = replace(memory, facts=(fact, *memory.facts[1:]), body=body)

    def datastore(self, moment: datetime, service: Service, old: str | None, new: str) -> None:
        chain = self.corpus.datastores.setdefault(service.name, [])
        if old is None:
            title = f"{service.name} keeps its data in {new}"
            body = f"We chose {new} as the datastore of the {service.name}. {self.rng.choice(WHY)}"
        else:
            title = f"{service.name} moves from {old} to {new}"
            body = (
                f"We decided to move the {service.name} from {old} to {new} as its datastore. "
                f"{self.rng.choice(WHY)}"
            )
        memory_id = self._add(
            moment,
            "decision",
            title,
            f"{body} {self._chatter()}",
            [self._service(service), self._tool(new)],
            [Fact(service.name, "stores_data_in", new)],
            [service.domain, "datastore", service.team],
            supersedes=tuple(chain[-1:]),
        )
        chain.append(memory_id)

    def preference(
        self, moment: datetime, person: Person, who: int, service: Service, tool: str
    ) -> None:
        body = (
            f"{person.name} likes using {tool} when working on the {service.name}. "
            f"{self.rng.choice(WHY)} {self._chatter()}"
        )
        memory_id = self._add(
            moment,
            "preference",
            f"{person.name} prefers {tool} for {service.name} work",
            body,
            [self._person(person), self._tool(tool), self._service(service)],
            [Fact(person.name, "prefers", tool), Fact(person.name, "works_on", service.name)],
            [service.domain, "preference", person.team],
        )
        self._note(("preference", who, service.name), memory_id)

    def about_tool(
        self, kind: str, moment: datetime, service: Service, tool: str, person: Person
    ) -> None:
        s, t = service.name, tool
        rng = self.rng
        templates = {
            "gotcha": (
                "gotcha",
                f"{s} breaks when {t} restarts",
                f"If {t} restarts, the {s} {rng.choice(SYMPTOM)}. {rng.choice(FIX)}",
                "breaks_when_restarting",
            ),
            "procedure": (
                "procedure",
                f"how to rotate {t} credentials for the {s}",
                f"Steps: {rng.choice(STEPS)}.",
                "rotates_credentials_of",
            ),
            "rule": (
                "rule",
                f"never deploy the {s} without {t} checks",
                f"Every deploy of the {s} must pass the {t} checks first. {rng.choice(WHY)}",
                "requires_checks_from",
            ),
            "event": (
                "event",
                f"{s} outage during the {t} upgrade",
                f"On {_day(moment)}, during the {t} upgrade, the {s} {rng.choice(SYMPTOM)}. "
                f"{rng.choice(FIX)}",
                "affected_by",
            ),
            "decision": (
                "decision",
                f"{s} adopts {t}",
                f"We decided the {s} starts using {t}. {rng.choice(WHY)}",
                "uses",
            ),
        }
        memory_type, title, body, predicate = templates[kind]
        body += f" {person.name} ({person.gloss}) wrote this down. {self._chatter()}"
        memory_id = self._add(
            moment,
            memory_type,
            title,
            body,
            [self._service(service), self._tool(tool), self._person(person)],
            [Fact(s, predicate, t), Fact(person.name, "reported", s)],
            [service.domain, tool.lower(), memory_type],
        )
        self._note((kind, s, t), memory_id)

    def note(self, moment: datetime, service: Service, who: list[int], crew: list[Person]) -> None:
        people = [crew[i] for i in who]
        topic = self.rng.choice(TOPICS)
        names = ", ".join(p.name for p in people)
        body = (
            f"Meeting on {topic} with {names}. We went through the {service.name} and what "
            f"it needs next. {self._chatter(2, 5)}"
        )
        self._add(
            moment,
            "note",
            f"notes on {topic} for the {service.name}",
            body,
            [self._service(service), *[self._person(p) for p in people]],
            [Fact(p.name, "discussed", service.name) for p in people],
            [service.domain, "meeting"],
        )


def memories(count: int, seed: int) -> list[Memory]:
    """count memories, the same for the same seed."""
    return build(count, seed).memories


def placed(made: list[Memory]) -> Iterator[tuple[str, Memory]]:
    """(relative path, memory) as the tool would place them: <type>/<YYYY-MM>/<slug>.md."""
    taken: set[str] = set()
    for memory in made:
        assert memory.created
        folder = f"{memory.memory_type}/{memory.created[:7]}"
        stem = slugify(memory.title)
        rel = f"{folder}/{stem}"
        if rel in taken:
            rel = f"{folder}/{stem}-{(memory.id or '')[-6:].lower()}"
        taken.add(rel)
        yield f"{rel}.md", memory


def write_vault(path: Path, count: int, seed: int) -> list[Memory]:
    """Create a vault at path holding count generated memories in one commit."""
    return write_corpus(path, build(count, seed))


def write_corpus(path: Path, corpus: Corpus) -> list[Memory]:
    """Create a vault at path holding the corpus's memories in one commit."""
    store = Store.init(path)
    store.close()
    made_dirs: set[Path] = set()
    for rel, memory in placed(corpus.memories):
        target = path / rel
        if target.parent not in made_dirs:
            target.parent.mkdir(parents=True, exist_ok=True)
            made_dirs.add(target.parent)
        target.write_bytes(render(memory).encode("utf-8"))
    kinds = sorted({m.memory_type for m in corpus.memories})
    count = len(corpus.memories)
    # Generated data needs no fsync per object (the vault's own writes keep core.fsync),
    # and names its own author, so it commits on a machine without a git identity.
    quick = ["-c", "core.fsync=none", "-c", "user.name=bench generator"]
    quick += ["-c", "user.email=bench@localhost"]
    for args in (
        ["add", "--all", "--", *kinds],
        ["commit", "--quiet", "-m", f"Import {count} memories from bench/generate.py"],
        ["commit-graph", "write", "--reachable", "--changed-paths"],
    ):
        subprocess.run(["git", *quick, *args], cwd=path, check=True)
    return corpus.memories


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
