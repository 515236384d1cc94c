#!/usr/bin/env python3
"""Generates Wingspan's bundled sample data set: short chat conversations with regular,
checkable answers (arithmetic, units, calendars, opposites, memory arithmetic for training
runs), so that a small model's loss visibly falls within a minute of CPU training.

Everything here is generated from templates in this file: no outside text, released with
Wingspan under CC0. Deterministic: the same script always writes the same bytes.

    python3 scripts/make_sample_data.py            # writes resources/sample-data/chat.jsonl
"""
import json
import os
import random

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resources", "sample-data", "chat.jsonl")

DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December"]
OPPOSITES = [("hot", "cold"), ("big", "small"), ("fast", "slow"), ("early", "late"),
             ("light", "dark"), ("open", "closed"), ("full", "empty"), ("high", "low"),
             ("wet", "dry"), ("loud", "quiet"), ("old", "new"), ("up", "down"),
             ("strong", "weak"), ("long", "short"), ("thick", "thin"), ("near", "far")]
PLURALS = [("mouse", "mice"), ("child", "children"), ("foot", "feet"), ("tooth", "teeth"),
           ("goose", "geese"), ("person", "people"), ("leaf", "leaves"), ("knife", "knives"),
           ("box", "boxes"), ("city", "cities"), ("wolf", "wolves"), ("man", "men"),
           ("woman", "women"), ("sheep", "sheep"), ("fish", "fish"), ("cactus", "cacti")]
COLOURS = [("blue", "yellow", "green"), ("red", "yellow", "orange"), ("red", "blue", "purple"),
           ("red", "white", "pink"), ("black", "white", "grey"), ("blue", "white", "light blue")]
WORDS = ["cat", "river", "lamp", "garden", "pencil", "window", "planet", "bridge", "candle",
         "forest", "rocket", "violin", "ladder", "castle", "harbor", "tunnel"]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine",
                "ten", "eleven", "twelve"]
SYSTEM = "You are a concise assistant. Answer in one sentence."


def arithmetic(r):
    a, b = r.randint(2, 49), r.randint(2, 49)
    op = r.choice(["plus", "minus", "times"])
    if op == "plus":
        v = a + b
    elif op == "minus":
        a, b = max(a, b), min(a, b)
        v = a - b
    else:
        a, b = r.randint(2, 12), r.randint(2, 12)
        v = a * b
    q = r.choice(["What is {a} {op} {b}?", "Compute {a} {op} {b}.", "How much is {a} {op} {b}?"])
    return q.format(a=a, op=op, b=b), f"{a} {op} {b} is {v}."


def units(r):
    kind = r.choice(["m_cm", "km_m", "kg_g", "h_min", "min_s", "l_ml"])
    n = r.randint(2, 15)
    table = {"m_cm": ("metres", "centimetres", 100), "km_m": ("kilometres", "metres", 1000),
             "kg_g": ("kilograms", "grams", 1000), "h_min": ("hours", "minutes", 60),
             "min_s": ("minutes", "seconds", 60), "l_ml": ("litres", "millilitres", 1000)}
    big, small, f = table[kind]
    return f"How many {small} are in {n} {big}?", f"{n} {big} is {n * f} {small}."


def calendar(r):
    if r.random() < 0.5:
        i = r.randrange(7)
        k = r.choice([1, 2, 3])
        word = {1: "the day after", 2: "two days after", 3: "three days after"}[k]
        return f"What day is {word} {DAYS[i]}?", f"{word.capitalize()} {DAYS[i]} is {DAYS[(i + k) % 7]}."
    i = r.randrange(12)
    return f"Which month comes after {MONTHS[i]}?", f"The month after {MONTHS[i]} is {MONTHS[(i + 1) % 12]}."


def opposite(r):
    a, b = r.choice(OPPOSITES)
    if r.random() < 0.5:
        a, b = b, a
    return f"What is the opposite of {a}?", f"The opposite of {a} is {b}."


def plural(r):
    s, p = r.choice(PLURALS)
    return f"What is the plural of {s}?", f"The plural of {s} is {p}."


def colour(r):
    a, b, c = r.choice(COLOURS)
    if r.random() < 0.5:
        a, b = b, a
    return f"What do you get when you mix {a} and {b} paint?", f"Mixing {a} and {b} gives {c}."


def backwards(r):
    w = r.choice(WORDS)
    return f"Spell {w} backwards.", f"Backwards, {w} is {w[::-1]}."


def counting(r):
    n = r.randint(1, 12)
    return f"Write the number {n} as a word.", f"The number {n} is written {NUMBER_WORDS[n]}."


def memory(r):
    """The arithmetic Wingspan itself is about: bytes per parameter and per method."""
    kind = r.choice(["weights", "adam", "bytes"])
    if kind == "bytes":
        fmt, b = r.choice([("fp32", "4 bytes"), ("bf16", "2 bytes"), ("fp16", "2 bytes"),
                           ("int8", "1 byte"), ("NF4", "half a byte")])
        return f"How much memory does one {fmt} weight take?", f"One {fmt} weight takes {b}."
    n = r.choice([1, 2, 3, 7, 8, 13, 14, 70])
    if kind == "weights":
        fmt, per = r.choice([("bf16", 2), ("fp32", 4), ("int8", 1)])
        return (f"How much memory do the weights of a {n}B model take in {fmt}?",
                f"About {n * per} GB: {n} billion parameters times {per} bytes.")
    return (f"How much memory do AdamW moments need for a full fine-tune of a {n}B model?",
            f"About {n * 8} GB: two fp32 moments of 4 bytes for each of {n} billion parameters.")


GENERATORS = [arithmetic, units, calendar, opposite, plural, colour, backwards, counting, memory]


def conversation(r):
    turns = 1 if r.random() < 0.8 else 2
    messages = []
    if r.random() < 0.3:
        messages.append({"role": "system", "content": SYSTEM})
    for _ in range(turns):
        q, a = r.choice(GENERATORS)(r)
        messages.append({"role": "user", "content": q})
        messages.append({"role": "assistant", "content": a})
    return {"messages": messages}


def main():
    r = random.Random(20240611)
    rows = [conversation(r) for _ in range(480)]
    os.makedirs(os.path.dirname(OUT), exist_ok=True)
    with open(OUT, "w", encoding="utf-8", newline="\n") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n")
    print(f"wrote {len(rows)} conversations to {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
