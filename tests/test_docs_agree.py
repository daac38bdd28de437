"""The docs against their sources, without a JVM or Spark: a fact a document states is its source's, or the test fails
naming the document and what it says.

- the bound's defaults (``queue_limit``, ``max_outstanding_bytes``): the option table's, as the generated stub
  (``python/spark_kinesis/_writer_options.pyi``) has them, which tests/test_typing.py holds to the table;
- the demo's length: said once, in the README; no other document gives another;
- the tested Spark lines: the pyspark releases `make test-lines` runs (the Makefile's ``LINES_PYSPARK``) and the ones
  `make test`'s two legs pin (requirements-dev.txt, requirements-spark3.5.txt);
- the metric names: every one the docs name is registered by the JVM's metrics code;
- the links between the docs: a link to a section names a heading the document has.

The documents are the ones users read: README.md, python/README.md (the package page), CHANGELOG.md and docs/*.md.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import ROOT

pytestmark = pytest.mark.spark35_leg  # no Spark: where `make test` has room


def documents() -> list[Path]:
    return [
        ROOT / "README.md",
        ROOT / "python" / "README.md",
        ROOT / "CHANGELOG.md",
        *sorted((ROOT / "docs").glob("*.md")),
    ]


def name(doc: Path) -> str:
    return str(doc.relative_to(ROOT))


def units(text: str) -> Iterator[str]:
    """A document as the units a fact is stated in: each table row and code line alone, prose by sentence (the lines
    of a paragraph or list item joined, split after a full stop before a capital, a backtick or a bracket)."""
    fenced = False
    paragraph: list[str] = []
    for line in [*text.splitlines(), ""]:
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
            continue
        alone = fenced or stripped.startswith("|")
        item = not alone and re.match(r"([-*]|\d+\.) ", stripped) is not None  # a list item: a paragraph of its own
        if paragraph and (alone or item or not stripped):
            yield from re.split(r"(?<=[.!?])\s+(?=[A-Z*`(\[])", " ".join(paragraph))
            paragraph = []
        if alone:
            yield stripped
        elif stripped:
            paragraph.append(stripped)


# -- the bound's defaults ---------------------------------------------------------------------------------------------

BOUND = ("queue_limit", "max_outstanding_bytes")
UNITS = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "records": 1, "bytes": 1}
QUANTITY = r"(\d[\d,_]*)(?:\s*(KiB|MiB|GiB|records|bytes)\b)?"


def stub_defaults() -> dict[str, int]:
    """The bound's defaults as the generated stub states them ("Default: 10000.")."""
    stub = (ROOT / "python" / "spark_kinesis" / "_writer_options.pyi").read_text()
    found = {}
    for option in BOUND:
        doc = re.search(rf'^    {option}: int\n    """(.*?)"""', stub, re.M | re.S)
        default = re.search(r"Default:\s+(\d+)\.", doc.group(1)) if doc is not None else None
        assert default is not None, f"_writer_options.pyi states no default for {option}"
        found[option] = int(default.group(1))
    return found


def quantity(number: str, unit: str | None) -> int:
    return int(number.replace(",", "").replace("_", "")) * UNITS[(unit or "records").lower()]


def default_claims(text: str, option: str) -> Iterator[tuple[str, int]]:
    """Each place ``text`` gives ``option`` a default: "`queue_limit` (default 10,000 records)", "the default
    `queue_limit`, 10,000", "`max_outstanding_bytes` (64 MiB)"; as (the words, the value)."""
    said = rf"`?{option}`?"
    forms = [
        rf"{said}(?:'s)?[^.;|]{{0,40}}?\bdefault\b[^0-9.;|]{{0,20}}?{QUANTITY}",
        rf"\bdefault\b[^0-9.;|]{{0,20}}?{said}[^0-9.;|]{{0,20}}?{QUANTITY}",
        rf"{said}\s*\({QUANTITY}\)",
    ]
    for form in forms:
        for m in re.finditer(form, text):
            yield m.group(0), quantity(m.group(1), m.group(2))


def test_the_bound_s_defaults_are_the_option_table_s() -> None:
    defaults = stub_defaults()
    sources = [*documents(), *sorted((ROOT / "python" / "spark_kinesis").glob("*.py"))]
    wrong, said = [], 0
    for doc in sources:
        text = " ".join(doc.read_text().split())
        for option, default in defaults.items():
            for words, value in default_claims(text, option):
                said += 1
                if value != default:
                    wrong.append(f"{name(doc)}: {words!r} (the option table: {default:,})")
    assert wrong == [], "documents give the bound other defaults than its option table:\n" + "\n".join(wrong)
    assert said >= len(BOUND), "no document states the bound's defaults (the README should, beside its example)"


# -- the demo's length ------------------------------------------------------------------------------------------------

#: The one place that says how long `make demo` takes.
DEMO_HOME = "README.md"
WORDS = {"a": 1.0, "an": 1.0, "one": 1.0, "two": 2.0, "three": 3.0}
SECONDS = {"s": 1, "sec": 1, "second": 1, "min": 60, "minute": 60, "h": 3600, "hour": 3600}
DURATION = re.compile(
    r"(?<![\w.])(\d+(?:\.\d+)?½?|½|an?|one|two|three)\s*(s|sec|seconds?|min|minutes?|h|hours?)\b", re.I
)


def seconds(amount: str, unit: str) -> float:
    half = 0.5 if amount.endswith("½") else 0.0
    number = amount.rstrip("½")
    value = WORDS[number.lower()] if number.lower() in WORDS else float(number or 0)
    return (value + half) * SECONDS[unit.lower().rstrip("s") or "s"]


def demo_lengths(text: str) -> list[tuple[str, float]]:
    """Each length a document gives `make demo`: the first duration after its name in a sentence, row or line."""
    found = []
    for unit in units(text):
        at = unit.find("make demo")
        m = DURATION.search(unit, at) if at >= 0 else None
        if m is not None:
            found.append((unit, seconds(m.group(1), m.group(2))))
    return found


def test_the_readme_says_how_long_the_demo_takes_once() -> None:
    said = demo_lengths((ROOT / DEMO_HOME).read_text())
    assert len(said) == 1, f"{DEMO_HOME} should say how long `make demo` takes once, where it is run: {said}"


#: Documents that still give the demo a length of their own, each with what it says (issue 83). Each entry is expected
#: to fail; once its document drops its figure for a link to the README, it passes, which fails the run (strict)
#: until the entry goes.
@pytest.mark.parametrize("doc", [name(d) for d in documents()])
def test_no_document_gives_the_demo_another_length(doc: str) -> None:
    home = demo_lengths((ROOT / DEMO_HOME).read_text())
    assert home, f"{DEMO_HOME} does not say how long `make demo` takes"
    other = [unit for unit, s in demo_lengths((ROOT / doc).read_text()) if s != home[0][1]]
    assert other == [], f"{doc} gives `make demo` another length than {DEMO_HOME} ({home[0][0]!r}): {other}"


# -- the tested Spark lines -------------------------------------------------------------------------------------------

VERSION = r"\d+\.\d+\.\d+"


def lines_pyspark() -> list[str]:
    m = re.search(r"^LINES_PYSPARK := (.+)$", (ROOT / "Makefile").read_text(), re.M)
    assert m is not None, "the Makefile has no LINES_PYSPARK"
    return m.group(1).split()


def pinned(requirements: str) -> str:
    m = re.search(rf"^pyspark==({VERSION})$", (ROOT / requirements).read_text(), re.M)
    assert m is not None, f"{requirements} pins no pyspark"
    return m.group(1)


def test_the_tested_pyspark_releases_are_the_ones_the_makefile_runs() -> None:
    """Every list of pyspark releases the docs give (three or more) is LINES_PYSPARK, and every pyspark release they
    name is one of it: a release no target runs is not tested."""
    runs = lines_pyspark()
    listed = rf"pyspark ((?:{VERSION}(?:,\s*|\s+and\s+))+{VERSION})"
    wrong = []
    for doc in documents():
        text = " ".join(doc.read_text().split())
        for m in re.finditer(listed, text):
            versions = re.findall(VERSION, m.group(1))
            if len(versions) >= 3 and versions != runs:
                wrong.append(f"{name(doc)}: {m.group(0)!r} (LINES_PYSPARK: {' '.join(runs)})")
        wrong += [
            f"{name(doc)}: pyspark {v}, which no target runs (LINES_PYSPARK: {' '.join(runs)})"
            for v in re.findall(rf"\bpyspark ({VERSION})", text)
            if v not in runs
        ]
    assert wrong == [], "\n".join(wrong)


def test_the_readme_s_legs_are_the_pinned_pysparks() -> None:
    """The README's table of `make test`'s legs names the pyspark each venv pins."""
    rows = dict(re.findall(rf"^\| (4\.x|3\.5) \| ({VERSION}) \|", (ROOT / "README.md").read_text(), re.M))
    assert rows == {"4.x": pinned("requirements-dev.txt"), "3.5": pinned("requirements-spark3.5.txt")}, rows


# -- the metric names -------------------------------------------------------------------------------------------------

CAMEL = re.compile(r"\b[a-z][a-z0-9]*(?:[A-Z][a-z0-9]*)+\b")
#: What makes a sentence, row or line speak of metrics.
METRIC_TALK = re.compile(
    r"\bmetrics?\b|\bgauges?\b|\bcounters?\b|\bhistograms?\b|\btimers?\b|accumulator|kinesisProducer\.|lastProgress",
    re.I,
)


def metric_names() -> set[str]:
    """Every metric name the JVM registers: the camelCase string literals of the code that makes metrics (the Spark
    metrics source's registry, the task and driver totals behind the accumulators and `writer.metrics()`)."""
    names: set[str] = set()
    for source in (ROOT / "jvm" / "src" / "main").rglob("*.scala"):
        code = source.read_text()
        if "MetricRegistry" in code or "TaskTotal(" in code:
            names |= {s for s in re.findall(r'"(\w+)"', code) if CAMEL.fullmatch(s)}
    assert {"recordsSent", "backpressureCycles"} <= names, f"no metric names found in jvm/src/main: {names}"
    return names


def camel_words(name: str) -> list[str]:
    return re.findall(r"^[a-z0-9]+|[A-Z][a-z0-9]*", name)


#: Folders of what builds and installs leave (no source of ours).
BUILT = {"node_modules", "target", "lines", ".cache", "__pycache__", "jars"}


def code_names() -> set[str]:
    """The camelCase names the code uses apart from its metrics' (methods, fields, build keys the docs cite): every
    one in the Scala, Java, Python and sbt sources but those that make metrics."""
    found = set(CAMEL.findall((ROOT / "build.sbt").read_text()))
    for folder in ("jvm", "bench", "project", "python", "testkit", "tools"):
        for where, dirs, files in os.walk(ROOT / folder):
            dirs[:] = [d for d in dirs if d not in BUILT]
            for file in files:
                if file.endswith((".scala", ".java", ".py", ".sbt")):
                    code = Path(where, file).read_text(errors="replace")
                    if "MetricRegistry" not in code and "TaskTotal(" not in code:
                        found |= set(CAMEL.findall(code))
    return found


def test_every_metric_the_docs_name_is_registered() -> None:
    """A backticked camelCase name (`kinesisProducer.<stream>.x` and `kinesis.<stream>.x` by their last part) that
    reads as a metric (it starts or ends as a metric name does: `records…`, `kpl…`, `…Sent`) or stands where the docs
    speak of metrics is a metric the JVM registers, unless the code uses it for something else."""
    names, used = metric_names(), code_names()
    starts = {camel_words(n)[0] for n in names}
    ends = {camel_words(n)[-1].lower() for n in names}
    unknown = []
    for doc in documents():
        for unit in units(doc.read_text()):
            mentioned = [t.rsplit(".", 1)[-1] for t in re.findall(r"`([^`\s]+)`", unit)]
            camel = [t for t in mentioned if CAMEL.fullmatch(t) and t not in names and t not in used]
            talk = METRIC_TALK.search(unit) is not None
            unknown += [
                f"{name(doc)}: `{t}` in {unit[:100]!r}"
                for t in camel
                if talk or camel_words(t)[0] in starts or camel_words(t)[-1].lower() in ends
            ]
    assert unknown == [], "the docs name metrics the JVM does not register:\n" + "\n".join(unknown)


# -- links to sections ------------------------------------------------------------------------------------------------


def anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a document's headings: lower case, punctuation dropped, spaces as hyphens; a repeated
    heading's with -1, -2 after it."""
    seen: dict[str, int] = {}
    out = set()
    for heading in re.findall(r"^#{1,6} (.+)$", doc.read_text(), re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        out.add(slug if n == 0 else f"{slug}-{n}")
    return out


def test_every_link_to_a_section_names_a_heading() -> None:
    broken = []
    for doc in documents():
        for target, anchor in re.findall(r"\]\(([^()\s#]*)#([^()\s]+)\)", doc.read_text()):
            if target.startswith("http"):
                continue
            linked = (doc.parent / target).resolve() if target else doc
            if linked.suffix == ".md" and linked.is_file() and anchor not in anchors(linked):
                broken.append(f"{name(doc)}: ({target}#{anchor}): {name(linked)} has no such heading")
    assert broken == [], "\n".join(broken)
