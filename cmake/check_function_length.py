#!/usr/bin/env python3
"""Fails when a function body in the C++ sources outside tests is longer than 80 lines (issue 46).

    python3 cmake/check_function_length.py <tree> [--limit 80] [--list] [--no-exemptions]

A function's length is counted as clang-tidy's readability-function-size counts it: the line of
its closing brace minus the line of its opening brace. A lambda is part of the function it is
written in; a lambda outside any function (a namespace-scope variable, an entry of a table) is a
function of its own. Every tracked-looking .h/.hpp/.cpp/.cc under the tree is read, except build
folders, hidden folders and any folder named `tests` (the planted cases of this check's own test
live in cmake/tests). A finding is `path:line: name is N lines (limit 80)`, the line being the
function's opening brace; --list prints every function with its length instead, longest first.

A textual check, not a second compile: the text is first blanked of comments, string and character
literals (raw strings too) and preprocessor lines, keeping its line breaks; then each `{` outside a
function is classified by the text before it (namespace, class, enum, initializer, function).
A file whose braces do not balance after that is itself a finding.
"""
import argparse
import os
import re
import sys

# Functions exempt while other work owns them, {(file, function): why}: each is reported as exempt,
# not as a finding, and an exemption whose function is no longer too long fails. None today.
EXEMPTIONS = {}

SOURCE_SUFFIXES = (".h", ".hpp", ".cpp", ".cc")
SKIPPED_FOLDERS = re.compile(r"^(build.*|tests|\..*)$")
IDENTIFIER_CHAR = re.compile(r"[A-Za-z0-9_]")
RAW_STRING_START = re.compile(r'(?:u8|u|U|L)?R"([^()\\ \t\n]{0,16})\(')


def blank(text, start, end):
    """The span [start, end) of text as spaces, its line breaks kept."""
    return re.sub(r"[^\n]", " ", text[start:end])


def blank_comments_and_literals(text):
    """text with comments, literals and preprocessor lines blanked; same length, same lines."""
    out = []
    i = 0
    n = len(text)
    line_start = True  # only blanks since the last line break: a '#' here starts a directive
    while i < n:
        c = text[i]
        if c == "\n":
            out.append(c)
            i += 1
            line_start = True
            continue
        if line_start and c == "#":
            j = i
            while j < n and text[j] != "\n":  # a directive runs on over backslash-newlines
                if text[j] == "\\" and j + 1 < n and text[j + 1] == "\n":
                    j += 2
                elif text.startswith("/*", j):  # a block comment in a directive may span lines
                    close = text.find("*/", j + 2)
                    j = n if close < 0 else close + 2
                else:
                    j += 1
            out.append(blank(text, i, j))
            i = j
            continue
        if not c.isspace():
            line_start = False
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(blank(text, i, j))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(blank(text, i, j))
            i = j
            continue
        raw = RAW_STRING_START.match(text, i)
        if raw and (i == 0 or not IDENTIFIER_CHAR.match(text[i - 1])):
            close = text.find(")" + raw.group(1) + '"', raw.end())
            j = n if close < 0 else close + len(raw.group(1)) + 2
            out.append('""' + blank(text, i + 2, j))
            i = j
            continue
        if c in "\"'":
            if c == "'" and is_digit_separator(text, i):
                out.append(" ")
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + blank(text, i + 1, j - 1) + c)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def is_digit_separator(text, i):
    """Whether the quote at i separates digits (1'000'000) rather than opening a character."""
    j = i
    while j > 0 and IDENTIFIER_CHAR.match(text[j - 1]):
        j -= 1
    return j < i and text[j].isdigit()


def strip_template_heads(head):
    """head without its `template <...>` parameter lists (their `class` is no class)."""
    out = []
    i = 0
    while True:
        m = re.compile(r"\btemplate\s*<").search(head, i)
        if not m:
            out.append(head[i:])
            return "".join(out)
        out.append(head[i:m.start()])
        depth = 0
        j = m.end() - 1
        while j < len(head):
            depth += {"<": 1, ">": -1}.get(head[j], 0)
            j += 1
            if depth == 0:
                break
        i = j


def top_level(head):
    """head with what sits inside parentheses and brackets removed (the parentheses kept)."""
    out = []
    depth = 0
    for c in head:
        if c in "([":
            if depth == 0:
                out.append(c)
            depth += 1
        elif c in ")]":
            depth -= 1
            if depth == 0:
                out.append(c)
        elif depth == 0:
            out.append(c)
    return "".join(out)


def matching_open(text, close, pair):
    """The index of the bracket that opens the one that closes at `close`, or -1."""
    opener, closer = pair
    depth = 0
    for j in range(close, -1, -1):
        if text[j] == closer:
            depth += 1
        elif text[j] == opener:
            depth -= 1
            if depth == 0:
                return j
    return -1


LAMBDA_TRAILER = re.compile(r"(?:\s|\bmutable\b|\bconstexpr\b|\bnoexcept\b|->\s*[\w:<>,\s*&]+)*$")


def lambda_opening(text, brace):
    """Where the lambda whose body opens at text[brace] starts (its '['), or -1 for no lambda."""
    window = max(0, brace - 400)  # a lambda's trailer is short; the search is quadratic in it
    m = LAMBDA_TRAILER.search(text, window, brace)
    j = m.start() - 1 if m else brace - 1
    while j >= 0 and text[j].isspace():
        j -= 1
    if j >= 0 and text[j] == ")":
        j = matching_open(text, j, "()") - 1
        while j >= 0 and text[j].isspace():
            j -= 1
    if j < 0 or text[j] != "]":
        return -1
    start = matching_open(text, j, "[]")
    k = start - 1
    while k >= 0 and text[k].isspace():
        k -= 1
    # `a[i] {` or `x() [` is a subscript, not a lambda; `= [`, `, [`, `( [`, `{ [`, `return [` are.
    if start < 0 or (k >= 0 and (IDENTIFIER_CHAR.match(text[k]) or text[k] in ")]")
                     and not re.search(r"\breturn$", text[max(0, k - 8):k + 1])):
        return -1
    return start


CLASS_HEAD = re.compile(r"\b(?:class|struct|union)\b[^()]*$")
FUNCTION_TAIL = re.compile(
    r"\)\s*(?:const\b|volatile\b|noexcept\b(?:\s*\(\))?|override\b|final\b|&&|&|\s)*(?:->.*)?$", re.S)
CTOR_INIT_LIST = re.compile(r"\)\s*(?:noexcept\s*)?:(?!:)", re.S)


def classify(head):
    """What a `{` at namespace or class scope opens, from the text before it."""
    head = re.sub(r"\b(public|private|protected)\s*:(?!:)", " ", head)
    head = strip_template_heads(head).strip()
    flat = top_level(head)
    if re.match(r"(inline\s+)?namespace\b", flat) or re.match(r'extern\s*"\s*"$', flat):
        return "namespace"
    if re.search(r"\benum\b", flat):
        return "initializer"
    if CLASS_HEAD.search(flat):
        return "class"
    without_operators = re.sub(r"\boperator\s*(\(\)|[^\s(]+)", "operator", flat)
    if "=" in without_operators.replace("==", ""):
        return "initializer"
    if FUNCTION_TAIL.search(flat) or (CTOR_INIT_LIST.search(flat) and flat.endswith(("}", ")"))):
        return "function"
    return "initializer"


def function_name(head):
    """The (qualified) name a function head declares: the identifier before its parameter list."""
    flat = top_level(strip_template_heads(head))
    flat = CTOR_INIT_LIST.split(flat)[0] + ")" if CTOR_INIT_LIST.search(flat) else flat
    m = re.search(r"((?:[\w~]+\s*::\s*)*(?:operator\s*(?:\(\)|[^\s(]+)|~?\w+))\s*\(\)[^()]*$", flat)
    return re.sub(r"\s+", "", m.group(1)) if m else "?"


def class_name(head):
    """The name a class head declares ("PeerRunner" of `class PeerRunner final : public X`)."""
    m = re.search(r"\b(?:class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?(\w+)", top_level(head))
    return m.group(1) if m else None


def lambda_name(text, start):
    """The variable a namespace-scope lambda initializes, or 'lambda'."""
    m = re.search(r"(\w+)\s*(?:=|\{)\s*$", text[:start])
    return m.group(1) if m else "lambda"


def functions_in(text):
    """Each function in text as (name, line of '{', length in lines), and a problem or None."""
    clean = blank_comments_and_literals(text)
    line_of = []
    line = 1
    for c in clean:
        line_of.append(line)
        line += c == "\n"
    found = []
    scopes = []  # each: (kind, where its head started, name, its '{', whether a lambda)
    functions_open = 0
    head_start = 0
    for i, c in enumerate(clean):
        if c == ";" and not functions_open and (not scopes or scopes[-1][0] != "initializer"):
            head_start = i + 1
        elif c == "{":
            if functions_open:
                scopes.append(("block", head_start, None, i, False))
                continue
            lambda_start = lambda_opening(clean, i)
            if lambda_start >= 0:
                kind, name = "function", lambda_name(clean, lambda_start)
            elif scopes and scopes[-1][0] == "initializer":
                kind, name = "initializer", None
            else:
                head = clean[head_start:i]
                kind = classify(head)
                name = function_name(head) if kind == "function" else class_name(head) if kind == "class" else None
                outer = scopes[-1] if scopes and scopes[-1][0] == "class" else None
                if kind == "function" and outer and outer[2] and "::" not in name:
                    name = outer[2] + "::" + name  # a member defined in its class
            scopes.append((kind, head_start, name, i, lambda_start >= 0))
            functions_open += kind == "function"
            if kind in ("namespace", "class"):
                head_start = i + 1
        elif c == "}":
            if not scopes:
                return found, "line %d: a '}' closes nothing" % line_of[i]
            kind, outer_head, name, brace, is_lambda = scopes.pop()
            if kind == "function":
                functions_open -= 1
                if not functions_open:
                    found.append((name, line_of[brace], line_of[i] - line_of[brace]))
            if kind in ("namespace", "class", "function"):
                head_start = i + 1
            # an initializer or a lambda is part of the head it sits in (`T x{...};`, `a_{b} {`)
            if kind == "initializer" or is_lambda:
                head_start = outer_head
    if scopes:
        return found, "line %d: a '{' is never closed" % line_of[scopes[-1][3]]
    return found, None


def source_files(tree):
    for folder, subfolders, files in os.walk(tree):
        subfolders[:] = sorted(d for d in subfolders if not SKIPPED_FOLDERS.match(d))
        for name in sorted(files):
            if name.endswith(SOURCE_SUFFIXES):
                yield os.path.join(folder, name)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("tree")
    parser.add_argument("--limit", type=int, default=80)
    parser.add_argument("--list", action="store_true", help="print every function, longest first")
    parser.add_argument("--no-exemptions", action="store_true")
    args = parser.parse_args(argv)
    exemptions = {} if args.no_exemptions else EXEMPTIONS
    findings, exempt, listing = [], [], []
    used_exemptions = set()
    read = set()
    for path in source_files(args.tree):
        rel = os.path.relpath(path, args.tree)
        read.add(rel)
        with open(path, encoding="utf-8", errors="replace") as f:
            functions, problem = functions_in(f.read())
        if problem:
            findings.append("%s: %s (the check cannot read this file's braces)" % (rel, problem))
        for name, line, length in functions:
            listing.append((length, "%s:%d: %s" % (rel, line, name)))
            if length <= args.limit:
                continue
            text = "%s:%d: %s is %d lines (limit %d)" % (rel, line, name, length, args.limit)
            if (rel, name) in exemptions:
                used_exemptions.add((rel, name))
                exempt.append("%s, exempt: %s" % (text, exemptions[(rel, name)]))
            else:
                findings.append(text)
    if args.list:
        for length, where in sorted(listing, key=lambda e: (-e[0], e[1])):
            print("%5d %s" % (length, where))
        return 0
    for (rel, name), why in sorted(exemptions.items()):
        if rel in read and (rel, name) not in used_exemptions:
            findings.append("%s: %s is exempt (%s) but is no longer over %d lines: drop the exemption"
                            % (rel, name, why, args.limit))
    for line in exempt:
        print(line)
    if findings:
        print("check_function_length: %d function(s) over %d lines; split each into named steps:"
              % (len(findings), args.limit))
        for line in findings:
            print("  " + line)
        return 1
    print("check_function_length: no function over %d lines in %s" % (args.limit, args.tree))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
