"""Other forms of a word that a stemmer leaves apart: the owner of what someone owns, what
someone taught.

Stemmers conflate regular inflections (owns, owned -> own) but not irregular ones (taught,
teach) or derivations: owner, ownership, leader and leadership keep their suffixes, so
"billing owner" missed "Ana owns the billing service". IRREGULAR maps the irregular forms
of common English verbs and nouns to the word the stemmer is given (the analyser's, at
indexing and at query time: core/words.py), leaving out those that are more often another
word (rose, bore, ground, wound, lay, bit, drew). related_forms gives the candidate stems
of one analysed word by adding or removing the agent and state suffixes; ranking keeps
only those the vault holds (a lexicon check: "paper" -> "pap" is dropped as no memory has
it) and scores them below the word itself.
"""

from __future__ import annotations

from functools import lru_cache

# base: its irregular forms (past, past participle; plurals), as the analyser folds them.
_IRREGULAR = """
arise: arose arisen | awake: awoke awoken | beat: beaten | become: became | begin: began begun
bend: bent | bite: bitten | bleed: bled | blow: blew blown | break: broke broken
breed: bred | bring: brought | build: built | burn: burnt | buy: bought | catch: caught
choose: chose chosen | come: came | creep: crept | deal: dealt | dig: dug | draw: drawn
dream: dreamt | drink: drank drunk drunken | drive: drove driven | eat: ate eaten
fall: fell fallen | feed: fed | feel: felt | fight: fought | find: found | flee: fled
fly: flew flown | forbid: forbade forbidden | forget: forgot forgotten
forgive: forgave forgiven | freeze: froze frozen | get: got gotten | give: gave given
go: went gone | grow: grew grown | hang: hung | hear: heard | hide: hid hidden
hold: held | keep: kept | kneel: knelt | know: knew known | lead: led | leap: leapt
learn: learnt | leave: left | lend: lent | lose: lost | make: made | mean: meant
meet: met | mistake: mistook mistaken | overcome: overcame | pay: paid
ride: rode ridden | ring: rang rung | rise: risen | run: ran | say: said | see: saw seen
seek: sought | sell: sold | send: sent | shake: shook shaken | shine: shone
shoot: shot | show: shown | shrink: shrank shrunk | sing: sang sung | sink: sank sunk
sit: sat | sleep: slept | slide: slid | speak: spoke spoken | speed: sped | spend: spent
spin: spun | spit: spat | spring: sprang sprung | stand: stood | steal: stole stolen
stick: stuck | sting: stung | stink: stank stunk | stride: strode | strike: struck
strive: strove striven | swear: swore sworn | sweep: swept | swim: swam swum
swing: swung | take: took taken | teach: taught | tear: tore torn | tell: told
think: thought | throw: threw thrown | understand: understood | undertake: undertook
uphold: upheld | wake: woke woken | wear: wore worn | weave: wove woven | weep: wept
win: won | withdraw: withdrew withdrawn | write: wrote written
child: children | man: men | woman: women | foot: feet | tooth: teeth | mouse: mice
goose: geese
"""
IRREGULAR = {
    form: base.strip()
    for entry in _IRREGULAR.replace("\n", " | ").split("|")
    if entry.strip()
    for base, forms in [entry.split(":")]
    for form in forms.split()
}

# Longest first: "ership" before "er", so leadership gives lead, not leadersh.
_SUFFIXES = ("ership", "ship", "er", "or")
_ADDED = ("er", "ership")
# A stem shorter than this left after removing a suffix is a fragment, not a word.
_SHORTEST = 3


@lru_cache(maxsize=16384)  # (bounded: every word a long-running server is asked)
def related_forms(word: str) -> tuple[str, ...]:
    """The analysed forms related to word: its stem without an agent or state suffix, and
    the stem with one (owner -> own, ownership; own -> owner, ownership; runner -> run;
    write -> writer). Spelling changes are guessed both ways; the lexicon check drops the
    wrong guesses."""
    bases = [word]
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= _SHORTEST:
            base = word[: -len(suffix)]
            bases = [base, base + "e"]  # writer -> write
            if base[-1] == base[-2]:
                bases.append(base[:-1])  # runner -> run
            break
    found = list(bases[1:] if bases[0] == word else bases)
    base = bases[0]
    found += [base + suffix for suffix in _ADDED]
    if base.endswith("e"):
        found.append(base + "r")  # write -> writer
    elif len(base) >= _SHORTEST and base[-1] not in "aeiouwy" and base[-2] in "aeiou":
        found.append(base + base[-1] + "er")  # run -> runner
    return tuple(dict.fromkeys(f for f in found if f != word))
