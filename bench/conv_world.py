"""The world bench/conversations.py draws its chat from: the people, what they talk about,
how they say it, and how a person later asks about it.

Each slot of a plan has the ways it is said (`says`, {v} the value), the direct question
(`ask`, sharing the statement's words), the same question in other words (`other`: only
names shared with what was said), and the short gist a title and a "when did ... mention"
question use. Small talk shares the common words of the chat, never a slot's.
"""

from __future__ import annotations

from dataclasses import dataclass

DAYS = 120
# Two Anas (told apart by their glosses) and two site reliability engineers.
PEOPLE = (
    ("Ana Ruiz", "backend engineer on the payments team"),
    ("Ana Costa", "product designer on the growth team"),
    ("Ben Okafor", "engineering manager for the payments team"),
    ("Priya Nair", "site reliability engineer on the platform team"),
    ("Tom Berg", "site reliability engineer on the data team"),
    ("Lena Fischer", "product manager for the mobile app"),
)


@dataclass(frozen=True)
class Slot:
    """One thing said about a topic, with the questions that ask for it."""

    name: str
    says: tuple[str, ...]
    ask: str
    other: str
    gist: str
    values: tuple[str, ...]
    predicate: str | None = None  # a fact speaker (or topic) -> the value, as an entity
    kind: str = "thing"
    value_gloss: str = ""


@dataclass(frozen=True)
class Plan:
    """A topic: a person's own (noun "move": "Ana's move") or the team's ("team offsite")."""

    key: str
    noun: str
    kind: str
    memory_type: str
    gloss: str
    slots: tuple[Slot, ...]
    asides: tuple[str, ...]  # on-topic remarks that state no slot


def _slot(name: str, says: str, ask: str, other: str, gist: str, values: str, *fact: str) -> Slot:
    """A slot from its lines: `says` and `values` are " | "-separated; fact is
    (predicate, value kind, value gloss) when the value is an entity."""
    return Slot(name, tuple(says.split(" | ")), ask, other, gist, tuple(values.split(" | ")), *fact)


# fmt: off
PERSONAL = (
    Plan("move", "move", "plan", "event", "{name} relocating to another city", (
        _slot("city",
              "I'm moving to {v} at the end of the year, the flat hunt starts now. | "
              "We've settled on {v} for the move; my partner found a job there.",
              "where is {who} moving to", "which city will {who} be living in next",
              "moving to {v}",
              "Lisbon | Valencia | Utrecht | Ghent | Tallinn | Bergen | Bologna | Gdansk",
              "moves_to", "city", "a city in Europe"),
        _slot("date",
              "The movers are booked for {v}. | "
              "Our moving van comes on {v}, so I'll be offline that day.",
              "when are the movers coming for {who}", "on what day does {who} change homes",
              "movers on {v}",
              "the 3rd of March | the 14th of March | the 28th of March | the 9th of April | "
              "the 22nd of April"),
    ), ("Packing boxes have taken over our living room.",
        "The new flat has a balcony, which I'm weirdly excited about.",
        "Still haven't found a school near the new place.")),
    Plan("leave", "time off", "plan", "event", "{name}'s holiday", (
        _slot("place",
              "I'm taking two weeks off to hike in {v}. | "
              "Booked it: a fortnight walking in {v}, no laptop.",
              "where is {who} hiking on holiday",
              "which region will {who} explore on foot while away from work",
              "hiking in {v}",
              "the Dolomites | the Pyrenees | Patagonia | the Tatras | the Scottish Highlands | "
              "Iceland | the Julian Alps",
              "visits", "place", "a hiking region"),
        _slot("dates",
              "I'll be out from {v}, back the Monday after. | My leave runs from {v}.",
              "when is {who} out on leave", "which days will {who} be on vacation",
              "out from {v}",
              "the 2nd of February | the 16th of February | the 9th of March | "
              "the 30th of March"),
    ), ("I still need to break in the new boots before the trip.",
        "Does anyone have a waterproof jacket I could borrow for the trip?")),
    Plan("talk", "talk", "plan", "event", "{name}'s conference talk", (
        _slot("subject",
              "I'm giving a talk on {v} at the spring conference. | "
              "My conference talk got accepted: it's about {v}.",
              "what is {who}'s conference talk about",
              "which subject will {who} present on stage", "talk on {v}",
              "retry budgets | feature flags at scale | testing payment flows | "
              "accessible forms | postmortem culture | schema migrations",
              "speaks_about", "subject", "a conference talk subject"),
        _slot("venue",
              "The conference is in {v} this year. | "
              "Flights to {v} for the conference are booked.",
              "where is {who}'s conference", "which city hosts the event {who} presents at",
              "conference in {v}", "Amsterdam | Berlin | Prague | Dublin | Vienna | Copenhagen"),
    ), ("I rehearsed the slides twice and they still run long.",
        "The organisers want a recorded version of the talk by next month.")),
    Plan("setup", "setup", "preference", "preference", "{name}'s desk and tools", (
        _slot("editor",
              "My editor of choice is {v} these days. | "
              "I've switched my editor to {v} and I'm not going back.",
              "which editor does {who} use", "what program does {who} write code in",
              "editor is {v}",
              "Neovim | Emacs | Helix | Zed | VS Code | Sublime Text | IntelliJ",
              "prefers", "tool", "a code editor"),
        _slot("keyboard",
              "I type on a {v} keyboard now, my wrists are grateful. | "
              "Picked up a {v} keyboard for my desk.",
              "what keyboard does {who} type on", "which input device sits on {who}'s desk",
              "keyboard: {v}",
              "split ergonomic | Japanese layout | low-profile mechanical | tiny forty percent"),
    ), ("I spent the evening tweaking my config instead of working.",
        "Pair programming is easier now that we share the same key bindings.")),
    Plan("standup", "standup", "preference", "preference", "{name}'s view on the daily standup", (
        _slot("time",
              "I'd prefer the standup at {v}; mornings are my focus time. | "
              "Could we move my standup slot to {v}?",
              "what time does {who} want the standup",
              "when would {who} like the daily sync call", "standup at {v}",
              "half past nine | ten o'clock | eleven | a quarter past two | "
              "four in the afternoon"),
        _slot("format",
              "Honestly I'd rather do standup {v}. | For standup I vote we go {v}.",
              "how does {who} want to run standup",
              "in what form would {who} like the daily sync", "standup {v}",
              "as written updates in the channel | on video with cameras on | "
              "walking, phone only | twice a week instead of daily"),
    ), ("Standup ran forty minutes again today, which defeats the point.",)),
    Plan("race", "race", "plan", "event", "{name}'s running race", (
        _slot("event",
              "I signed up for the {v} in April. | "
              "Registration done for the {v}, so training starts now.",
              "which race did {who} sign up for", "what running event did {who} enter",
              "signed up for the {v}",
              "Berlin half marathon | Rotterdam marathon | Lisbon ten k | Ghent trail run | "
              "Vienna city run",
              "runs", "event", "a running race"),
        _slot("goal",
              "My target is to finish in {v}. | I'm aiming for {v}, we'll see.",
              "what finish time is {who} aiming for",
              "how fast does {who} hope to cross the line", "target {v}",
              "under two hours | under four hours | fifty minutes | one hour forty"),
    ), ("My knee complained after the long run on Sunday.",
        "Anyone know a physio near the office?")),
)

TEAM = (
    Plan("offsite", "team offsite", "event", "event", "the engineering offsite", (
        _slot("venue",
              "The team offsite will be at {v}. | "
              "We've booked {v} for the team offsite, two nights.",
              "where is the team offsite", "what place have we reserved for the team offsite",
              "team offsite at {v}",
              "a farmhouse near Sintra | the lake hotel in Annecy | "
              "a converted mill outside Leeds | an old observatory in Porto | "
              "a ski lodge in Bansko"),
        _slot("dates",
              "The team offsite dates are {v}. | Let's lock in {v} for the team offsite.",
              "when is the team offsite", "which days do we all travel for the team offsite",
              "team offsite in {v}",
              "the first week of May | mid-June | the last week of April | early September"),
    ), ("For the team offsite we still need someone to plan the Thursday dinner.",
        "Please send dietary needs for the team offsite to the shared sheet.")),
    Plan("launch", "checkout launch", "project", "event", "release of the redesigned checkout", (
        _slot("date",
              "We're aiming to ship the checkout launch on {v}. | "
              "New target for the checkout launch: {v}.",
              "when is the checkout launch", "what day does the checkout launch go live",
              "checkout launch on {v}",
              "the 12th of March | the 26th of March | the 7th of April | the 21st of April"),
        _slot("cut",
              "For the checkout launch we're cutting {v} from scope. | "
              "We're pushing {v} out of the checkout launch to the next release.",
              "what are we cutting from the checkout launch",
              "which feature was dropped before the checkout launch",
              "checkout launch without {v}",
              "saved cards | gift cards | split payments | the loyalty banner | guest checkout"),
    ), ("The checkout launch checklist is in the wiki, please add your bits.",)),
    Plan("bus", "event bus", "system", "decision", "the queue between our services", (
        _slot("broker",
              "We decided to build the event bus on {v}. | Final call: the event bus runs on {v}.",
              "what did we decide to use for the event bus",
              "which technology carries messages on the event bus", "event bus on {v}",
              "Kafka | NATS | RabbitMQ | Redpanda | Pulsar",
              "runs_on", "tool", "a message broker"),
        _slot("retention",
              "Messages on the event bus are kept for {v}. | "
              "Retention for the event bus is set to {v}.",
              "how long are messages kept on the event bus",
              "what is the storage window of the event bus", "event bus retention {v}",
              "three days | a week | two weeks | thirty days"),
    ), ("The event bus dashboard shows lag spikes every night around two.",)),
    Plan("warehouse", "data warehouse", "system", "decision", "where analytics data lives", (
        _slot("engine",
              "We agreed to move the data warehouse to {v}. | "
              "The data warehouse is going onto {v}, the contract is signed.",
              "which product are we moving the data warehouse to",
              "what will the data warehouse run on after the migration",
              "data warehouse to {v}", "BigQuery | Snowflake | ClickHouse | DuckDB | Redshift",
              "runs_on", "tool", "an analytics database"),
    ), ("Nightly loads into the data warehouse failed twice this week.",
        "Who has admin access on the data warehouse?")),
    Plan("review", "design review", "meeting", "decision", "the weekly review of product designs", (
        _slot("day",
              "The design review moves to {v} afternoons. | "
              "From now on the design review happens on {v}.",
              "which day is the design review",
              "on what weekday do we go over mockups at the design review",
              "design review on {v}", "Monday | Tuesday | Wednesday | Thursday | Friday"),
        _slot("tool",
              "Let's keep the design review files in {v}. | "
              "Design review mockups live in {v} from now on.",
              "where are the design review files kept",
              "which app holds the design review drawings", "design review in {v}",
              "Figma | Penpot | Sketch", "uses", "tool", "a design tool"),
    ), ("The design review ran over because we argued about button colours.",)),
)
# fmt: on

# (project, gloss): who leads it changes hands.
LEADS = (
    ("on-call rota", "who answers production pages"),
    ("billing migration", "moving invoices to the new ledger"),
    ("mobile release train", "the fortnightly app store release"),
    ("accessibility audit", "the yearly check of the web app for screen readers"),
    ("incident reviews", "the weekly look back at outages"),
)
LEAD_FIRST = (
    "{new} is leading the {p} from today.",
    "Quick update: {new} owns the {p} as of this week.",
    "{new} will run the {p} going forward.",
)
LEAD_NEXT = (
    "{new} takes over the {p} from {old} this week.",
    "Handover done: {new} now runs the {p} and {old} has stepped back.",
    "Starting today the {p} is with {new}; thanks {old} for all the work.",
)
LEAD_ASK = ("who leads the {p} now", "who owns the {p} today")
LEAD_OTHER = ("who is in charge of the {p} at the moment",)
LEAD_WHEN = "who led the {p} on {day}"

CHANGES = (
    "Small change of plan.",
    "Forget what I said before.",
    "Update on this:",
    "I changed my mind.",
    "Turns out that's not happening after all.",
)
GREETINGS = (
    "Morning all!",
    "Hi everyone, hope the week started well.",
    "Hey, sorry I'm a few minutes late.",
    "Good afternoon, folks.",
    "Hello hello, can everyone hear me?",
    "Hi all, quick one today if we can.",
    "Morning! Coffee in hand, ready when you are.",
)
ACKS = (
    "Thanks, that makes sense.",
    "Got it, I'll note that down.",
    "Sounds good to me.",
    "Fair enough, let's go with that.",
    "Noted, thanks for the heads-up.",
    "Great, that works for me.",
    "Ok, I'll update the plan.",
    "Nice one.",
    "Makes sense. Let me know if you need a hand.",
    "Agreed, no objections here.",
)
CLOSINGS = (
    "Right, let's wrap up here.",
    "Talk tomorrow, everyone.",
    "I have to jump into another call, bye!",
    "Thanks all, have a good evening.",
    "That's it from me this week.",
)
FILLS = {
    "sport": ("the cup final", "the cycling", "the derby", "the tennis"),
    "food": ("ramen", "falafel", "dumpling", "pizza", "Ethiopian"),
    "floor": ("second", "third", "fourth"),
    "show": ("the new detective series", "that baking show", "the documentary about octopuses"),
    "weather": ("rain", "heat", "fog", "wind"),
    "pet": ("cat", "puppy", "rabbit"),
}
# (gist for the title, the line)
SMALL_TALK = (
    ("the match", "Did anyone watch {sport} last night? What a finish."),
    ("lunch", "Has anyone tried the new {food} place near the office?"),
    ("coffee machine", "The coffee machine on the {floor} floor is broken again."),
    ("a series", "I binged {show} over the weekend, highly recommend it."),
    ("the weather", "This {weather} is unbelievable, I nearly stayed home."),
    ("a pet", "We're thinking of getting a {pet}, any advice?"),
    ("the weekend", "Any plans for the weekend? I'm hoping to do absolutely nothing."),
    ("a podcast", "I found a great podcast about the history of maps."),
    ("the train", "My train was cancelled again, so I'm working from the café today."),
    ("a book", "Just finished a novel set in a lighthouse, it was lovely."),
    ("the office", "They finally fixed the blinds in the big meeting room."),
    ("next item", "Let's move on to the next item, we're running late."),
    ("the calendar", "Can someone send the calendar invite again? It vanished from mine."),
    ("the kids", "The kids have a school play tonight, so I'm leaving at five."),
    ("a guitar", "Someone left a guitar in the kitchen, is it yours?"),
    ("the week", "What a week, I need a long walk and an early night."),
)
# Questions nothing in the chat answers: about the people, and about the team.
ABSENT_PERSONAL = (
    "where is {who} going sailing this summer",
    "what is the name of {who}'s dog",
    "which choir did {who} join",
    "what did {who} say about the bathroom renovation",
    "when is {who}'s driving test",
    "which piano teacher does {who} recommend",
)
ABSENT_TEAM = (
    "who leads the warehouse robotics project",
    "when is the Berlin sales kickoff",
    "what did we decide about the kiosk firmware",
    "which vendor did we pick for the office plants",
    "where is the hackathon this autumn",
    "who owns the partner portal",
    "when does the print catalogue go out",
    "what did we agree on for the parking permits",
)
# Replies to a statement on a plan: they name the speaker, the topic or the value, and answer
# nothing (the hard negatives of a question about it).
REPLIES = (
    "Good luck with the {noun}, {first}!",
    "Oh nice, {v}! I was there years ago.",
    "{first}, shout if you need a hand with the {noun}.",
    "Wait, {v}? I thought we said something else.",
    "Can you put the {noun} details in the shared doc, {first}?",
    "Ha, {v}, that's brave.",
)
# Work chatter between the statements: the chat's common words, some shared with the topics.
WORK_TALK = (
    ("the build", "The build is red again, I'm looking at it."),
    ("a pull request", "Could someone review my pull request before lunch?"),
    ("the sprint", "I moved two tickets to the next sprint, we were overbooked."),
    ("a meeting", "Can we push our one-to-one to Thursday?"),
    ("the wiki", "I updated the wiki page on the release checklist."),
    ("a bug", "Found the bug: a timezone mistake in the date picker."),
    ("the demo", "The demo went fine, people liked the new flow."),
    ("the roadmap", "The roadmap doc is open for comments until Friday."),
    ("an incident", "Small incident overnight, the pager went off twice but it's quiet now."),
    ("the budget", "Finance wants the travel budget numbers by the end of the month."),
    ("a workshop", "There's a workshop on writing tests next Wednesday if anyone is interested."),
    ("the laptop", "My laptop died, I'm on a loaner until the new one arrives."),
    ("a survey", "Please fill in the team survey, it takes five minutes."),
    ("the retro", "Retro notes are up, the main theme was too many meetings."),
    ("a new hire", "Our new hire starts on Monday, please say hello."),
    ("the deadline", "We're a bit behind on the deadline but nothing dramatic."),
    ("standup notes", "I'll post the standup notes in the channel."),
    ("the release", "The release went out this morning without drama."),
    ("a thread", "We should move this discussion to a thread."),
    ("a holiday", "Reminder that Monday is a public holiday here."),
    ("a conference", "Anyone going to a conference this year? The budget allows one each."),
    ("a lead", "Who's the right person to ask about access to the staging database?"),
)
