#!/usr/bin/env python3
"""Generates the simulation's built-in general-knowledge corpus from WordNet 3.0.

The persona simulation retrieves general-knowledge passages for the posts
its agents write (the paper uses HotpotQA's Wikipedia paragraphs). Its
built-in stand-in is generated on each machine from a Debian package, not
committed: WordNet's noun synsets, one passage each, titled by the synset's
lemmas and holding its gloss (definition and examples).

`ensure_knowledge` in infra/env.sh installs the package and runs this
script; by hand (Debian or Ubuntu, from the repository root):

    apt-get update && apt-get install -y wordnet-base
    python3 infra/gen-knowledge.py            # /usr/share/wordnet -> $SOME_CACHE/knowledge/
    python3 infra/gen-knowledge.py DIR OUT    # another WordNet dict folder / output

It writes OUT (default $SOME_CACHE/knowledge/wordnet-nouns.jsonl, with
$SOME_CACHE defaulting to ~/.cache/some: where `builtin_passages` reads
it), one {"title": ..., "text": ...} object per line, replacing any old
file only once the new one is whole, and prints the counts and the sha256
that infra/knowledge.md records. The output depends only on data.noun and
cntlist.rev. Standard library only.

What is kept (synsets in data.noun order):
  - every instance noun (a synset with an "@i" pointer: people, places,
    events, works, organisations), whatever its lexicographer file;
  - every synset of the lexicographer files that hold topics people post
    about (TOPICAL below: activities and sports, artifacts and technology,
    the body and health, knowledge and science, communication, music and
    film, events, feelings, food, groups and organisations, places, people
    and occupations, phenomena, money, processes, states and diseases,
    substances and drugs, time and holidays);
  - animals and plants only where a lemma of the synset is sense-tagged in
    SemCor (a count in cntlist.rev: dog, horse, oak, rose); the rest of
    noun.animal and noun.plant is species and taxonomy, and with it the
    file would pass 2 MB.
Left out: noun.Tops, noun.attribute, noun.motive, noun.object (except its
instances: rivers, mountains), noun.quantity (units), noun.relation,
noun.shape.
"""

import hashlib
import json
import os
import sys

# Lexicographer file numbers (WordNet's lexnames(5WN)) kept whole.
TOPICAL = {
    4: "noun.act",
    6: "noun.artifact",
    8: "noun.body",
    9: "noun.cognition",
    10: "noun.communication",
    11: "noun.event",
    12: "noun.feeling",
    13: "noun.food",
    14: "noun.group",
    15: "noun.location",
    18: "noun.person",
    19: "noun.phenomenon",
    21: "noun.possession",
    22: "noun.process",
    26: "noun.state",
    27: "noun.substance",
    28: "noun.time",
}
# Kept where SemCor tags a lemma of the synset.
COMMON_ONLY = {5: "noun.animal", 20: "noun.plant"}


def tagged_senses(path):
    """Sense keys with a SemCor tag count (cntlist.rev: 'key sense_number count')."""
    keys = set()
    with open(path, encoding="ascii") as f:
        for n, line in enumerate(f, 1):
            parts = line.split()
            if len(parts) != 3:
                sys.exit(f"{path}: line {n}: expected 'sense_key sense_number tag_count', found {line!r}")
            if int(parts[2]) > 0:
                keys.add(parts[0])
    return keys


def synsets(path):
    """(lexfile, lemmas with lex ids, is_instance, gloss) for each noun synset, in file order."""
    with open(path, encoding="ascii") as f:
        for n, line in enumerate(f, 1):
            if line.startswith("  "):  # the licence header
                continue
            head, sep, gloss = line.partition(" | ")
            fields = head.split()
            if not sep or len(fields) < 6 or fields[2] != "n":
                sys.exit(f"{path}: line {n}: not a noun synset line: {line[:80]!r}")
            words = int(fields[3], 16)
            lemmas = [(fields[4 + 2 * i], int(fields[5 + 2 * i], 16)) for i in range(words)]
            pointers = int(fields[4 + 2 * words])
            symbols = fields[5 + 2 * words :: 4][:pointers]
            yield int(fields[1]), lemmas, "@i" in symbols, gloss.strip()


def sense_key(lemma, lexfile, lex_id):
    return f"{lemma.lower()}%1:{lexfile:02d}:{lex_id:02d}::"


def main():
    wordnet = sys.argv[1] if len(sys.argv) > 1 else "/usr/share/wordnet"
    cache = os.environ.get("SOME_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "some")
    out = sys.argv[2] if len(sys.argv) > 2 else os.path.join(cache, "knowledge", "wordnet-nouns.jsonl")
    tagged = tagged_senses(os.path.join(wordnet, "cntlist.rev"))
    kept = {"instance": 0, "topical": 0, "common": 0}
    seen = 0
    lines = []
    for lexfile, lemmas, instance, gloss in synsets(os.path.join(wordnet, "data.noun")):
        seen += 1
        if instance:
            kept["instance"] += 1
        elif lexfile in TOPICAL:
            kept["topical"] += 1
        elif lexfile in COMMON_ONLY and any(sense_key(w, lexfile, i) in tagged for w, i in lemmas):
            kept["common"] += 1
        else:
            continue
        if not gloss:
            sys.exit(f"synset {lemmas[0][0]} has no gloss")
        title = ", ".join(w.replace("_", " ") for w, _ in lemmas)
        lines.append(json.dumps({"title": title, "text": gloss}, ensure_ascii=False))
    body = ("\n".join(lines) + "\n").encode("utf-8")
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    partial = out + ".partial"
    with open(partial, "wb") as f:
        f.write(body)
    os.replace(partial, out)
    print(f"noun synsets read: {seen}")
    print(f"passages: {len(lines)} (instance nouns {kept['instance']}, topical files {kept['topical']}, "
          f"SemCor-tagged animals and plants {kept['common']})")
    print(f"{out}: {len(body)} bytes, sha256 {hashlib.sha256(body).hexdigest()}")


if __name__ == "__main__":
    main()
