"""Other forms of a word that a stemmer leaves apart: the owner of what someone owns.

Stemmers conflate inflections (owns, owned -> own) but not derivations: owner, ownership,
leader and leadership keep their suffixes, so "billing owner" missed "Ana owns the
billing service". related_forms gives the candidate stems of one analysed word by adding
or removing the agent and state suffixes; ranking keeps only those the vault holds (a
lexicon check: "paper" -> "pap" is dropped as no memory has it) and scores them below the
word itself.
"""

from __future__ import annotations

from functools import lru_cache

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
