#!/usr/bin/env python3
"""md2scdoc.py NAME SECTION DESCRIPTION < page.md > page.scd

Turns the Markdown of docs/control-protocol.md into scdoc(5) source, so that the protocol has one
text and session-cleanup-protocol(7) cannot drift from it. It knows the Markdown that file uses:
headings, paragraphs, "- " lists (continued by indented lines), pipe tables (as terms with
their text indented), indented and fenced
code blocks, `code`, **bold** and [links](url). Anything else is kept as paragraph text.
"""
import re
import sys


def escape(text):
    """Text scdoc must not interpret: backslashes, asterisks and underscores."""
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("_", "\\_")


def inline(text):
    """`code` and **bold** become bold, [text](url) becomes "text (url)"; the rest is escaped."""
    out = []
    pattern = re.compile(r"`([^`]+)`|\*\*([^*]+)\*\*|\[([^\]]+)\]\(([^)]+)\)")
    position = 0
    for match in pattern.finditer(text):
        out.append(escape(text[position:match.start()]))
        code, bold, label, url = match.groups()
        if code is not None:
            out.append("*" + escape(code) + "*")
        elif bold is not None:
            out.append("*" + escape(bold) + "*")
        else:
            out.append(escape(label) + " (" + escape(url) + ")")
        position = match.end()
    out.append(escape(text[position:]))
    return "".join(out)


def table(rows):
    """A pipe table as man pages show one: each row's first cell as a term, the others indented
    under it (a roff table would break on cells holding "T{" or "T}", which JSON does)."""
    cells = [[c.strip() for c in row.strip().strip("|").split("|")] for row in rows]
    cells = [row for row in cells if not all(re.fullmatch(r":?-+:?", c) for c in row)]
    header, body = cells[0], cells[1:]
    lines = []
    for row in body:
        lines.append(inline(row[0]))
        rest = row[1:]
        if len(rest) == 1:
            lines.append("\t" + inline(rest[0]))
        else:
            lines += ["\t" + inline(title) + ": " + inline(cell) + "++" for title, cell in zip(header[1:], rest)]
            lines[-1] = lines[-1][:-2]
        lines.append("")
    return lines


def convert(markdown, name, section, description):
    out = [f"{name}({section}) \"session-cleanup\" \"Miscellaneous Information Manual\"", "",
           "; Generated from docs/control-protocol.md by docs/man/md2scdoc.py: edit that file.", "",
           "# NAME", "", f"{name} - {description}", "", "# DESCRIPTION", ""]
    lines = markdown.splitlines()
    index = 0
    paragraph = []

    def flush():
        if paragraph:
            out.append(inline(" ".join(paragraph)))
            out.append("")
            paragraph.clear()

    while index < len(lines):
        line = lines[index]
        if line.startswith("# "):            # the document's title: the NAME section says it
            flush()
            index += 1
        elif line.startswith("#"):
            flush()
            title = line.lstrip("#").strip()
            out += ["# " + escape(title.upper()), ""]
            index += 1
        elif line.startswith("```"):
            flush()
            index += 1
            out.append("```")
            while index < len(lines) and not lines[index].startswith("```"):
                out.append(lines[index].replace("\\", "\\\\"))
                index += 1
            out += ["```", ""]
            index += 1
        elif line.startswith("    ") and not paragraph:
            out.append("```")
            while index < len(lines) and (lines[index].startswith("    ") or not lines[index].strip()):
                if not lines[index].strip() and not (index + 1 < len(lines) and lines[index + 1].startswith("    ")):
                    break
                out.append(lines[index][4:].replace("\\", "\\\\"))
                index += 1
            out += ["```", ""]
        elif line.startswith("|"):
            flush()
            rows = []
            while index < len(lines) and lines[index].startswith("|"):
                rows.append(lines[index])
                index += 1
            out += table(rows)
        elif re.match(r"- ", line):
            flush()
            while index < len(lines) and (lines[index].startswith("- ") or lines[index].startswith("  ")):
                item = [lines[index][2:].strip()]
                index += 1
                while index < len(lines) and lines[index].startswith("  ") and not lines[index].startswith("- "):
                    item.append(lines[index].strip())
                    index += 1
                out.append("- " + inline(" ".join(item)))
            out.append("")
        elif not line.strip():
            flush()
            index += 1
        else:
            paragraph.append(line.strip())
            index += 1
    flush()
    out += ["# SEE ALSO", "", "*session-cleanup*(8), *session-cleanup.conf*(5), *unix*(7)"]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 4:
        sys.exit(__doc__.splitlines()[0])
    sys.stdout.write(convert(sys.stdin.read(), *sys.argv[1:]))
