"""What the make-*-input.py scripts share: divisors, and the cases printed
as JSON with repeated names dropped (first one kept)."""
import json


def divisors(n):
    return [d for d in range(1, n + 1) if n % d == 0]


def print_unique(cases):
    names = set()
    unique = []
    for c in cases:
        if c['name'] not in names:
            names.add(c['name'])
            unique.append(c)
    print(json.dumps(unique, indent=1))
