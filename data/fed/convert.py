"""Convert FED's `fed_data.json` (Mehri & Eskenazi 2020) to judgebench conversation samples.

Usage: python data/fed/convert.py fed_data.json data/fed/fed.jsonl

One line per rated system turn: `item` is the dialogue (`fed-NNN`, in the order of its
dialogue-level entry in the file), `system` the bot (Meena, Mitsuku, Human), `messages` the
whole dialogue (`User:` lines as user, `System:` lines as assistant), `turn` the index of the
rated assistant message, `human` the mean of the annotators' numeric ratings per quality
(FED's "N/A" answers are left out of the mean). Then one line per dialogue with no `turn` (the
dialogue-level ratings), item `fed-NNN`, system the bot, `metadata.level` = "dialogue".
"""

from __future__ import annotations

import json
import sys
from statistics import fmean


def messages_of(text: str) -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    for line in text.split("\n"):
        speaker, _, content = line.partition(": ")
        role = {"User": "user", "System": "assistant"}[speaker]
        if out and out[-1]["role"] == role:  # a speaker's line broken in two
            out[-1]["content"] += "\n" + content
        else:
            out.append({"role": role, "content": content})
    return out


def ratings(annotations: dict[str, list[object]]) -> dict[str, float]:
    out = {}
    for quality, values in annotations.items():
        numbers = [float(v) for v in values if isinstance(v, int | float)]
        if numbers:
            out[quality.lower().replace(" ", "_")] = round(fmean(numbers), 6)
    return out


def convert(entries: list[dict[str, object]]) -> list[dict[str, object]]:
    dialogues = [e for e in entries if "response" not in e]
    turns = [e for e in entries if "response" in e]
    lines: list[dict[str, object]] = []
    levels: list[dict[str, object]] = []
    for number, dialogue in enumerate(dialogues, start=1):
        item = f"fed-{number:03d}"
        full = messages_of(str(dialogue["context"]))
        # A rated turn belongs to the dialogue whose text its context begins; the last rated
        # turn may be the bot's answer after the dialogue-level text ends.
        rated: list[tuple[int, dict[str, object]]] = []
        for entry in turns:
            context = messages_of(str(entry["context"]))
            if entry["system"] == dialogue["system"] and full[:len(context)] == context:
                shown = [*context, *messages_of(str(entry["response"]))]
                if len(shown) > len(full):
                    full = shown
                if all(turn != len(shown) - 1 for turn, _ in rated):  # FED repeats 2 turns
                    rated.append((len(shown) - 1, entry))
        for turn, entry in sorted(rated, key=lambda pair: pair[0]):
            lines.append({"item": item, "system": entry["system"], "messages": full,
                          "turn": turn,
                          "human": ratings(entry["annotations"])})  # type: ignore[arg-type]
        levels.append({"item": item, "system": dialogue["system"], "messages": full,
                       "human": ratings(dialogue["annotations"]),  # type: ignore[arg-type]
                       "metadata": {"level": "dialogue"}})
    return lines + levels


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as handle:
        rows = convert(json.load(handle))
    with open(sys.argv[2], "w", encoding="utf-8") as out:
        for row in rows:
            out.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"{len(rows)} lines")
