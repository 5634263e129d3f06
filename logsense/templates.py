"""Line templates: mask what varies between runs, then group messages into templates, Drain-style.

`mask()` replaces the parts of a message that differ from one startup to the next even
when nothing is wrong: numbers, sizes (`12.3 GB`), times, IP addresses and ports, URLs,
hex and uuids, ranks (`TP3`, `rank 3`, `cuda:3`), GPU model names, and the directories
of a path. The file name of a path is kept: it names the code (`vision.py`), where the
directories only name the machine (`/usr/local/lib/python3.12/dist-packages/...`).

`TemplateMiner` is a small Drain (He et al., ICWS 2017; the Drain3 package works the same
way): a fixed-depth prefix tree routes a message by its token count and its first tokens
to a leaf; in the leaf, the most similar template (share of equal tokens) takes the
message when the share reaches the threshold, and the positions where they differ become
`<*>`. Otherwise the message starts a template of its own. Where this one differs, on purpose:

- tokens that hold a `/` (paths, URL routes such as `/generate`) and the function of a
  traceback frame are never wildcarded: two lines that differ in the code file, the
  function or the route are two templates, because that difference is usually the one that
  matters when two startups are compared ("the bad run went through vision.py");
- the masks do most of the work, so the similarity threshold is stricter than Drain3's
  default (0.7 against 0.4): "hidden_states = self.encoder(" and "hidden_states =
  self.attn(" stay apart;
- a token with digits takes the branch of its shape (`qwen3_vl.py` -> `qwen0_vl.py`)
  rather than Drain's `<*>` branch: the masks already took the numbers out, and one
  catch-all branch is where Drain's leaves grow long and slow;
- memory and time are bounded: at most `max_clusters` templates (the least recently used
  is dropped), at most `max_leaf` templates in a leaf (the one idle longest is dropped, so
  a line never compares against more than `max_leaf` templates), at most `max_tokens`
  tokens of a line count, and the cache of exact masked lines is cleared when it fills.

Everything is deterministic: the same lines in the same order give the same templates and
ids. `match()` never changes the miner: it says whether a message fits a known template
(every non-wildcard token equal), the novelty test against a healthy baseline.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterable
from functools import lru_cache
from typing import Any

WILDCARD = "<*>"
MAX_MASKED = 2048  # characters of a message that are masked and mined
TRUNCATED = "<+>"  # the last token of a line cut at max_tokens

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s'\"<>()\[\]{},]+")
_B64 = re.compile(r"(?<![A-Za-z0-9+/])[A-Za-z0-9+/]{48,}={0,2}")
# directories only: "/usr/lib/x/vision.py" -> "<PATH>/vision.py"; a route such as "/generate" stays
_PATH = re.compile(r"/(?<![\w<>/-]/)(?:[\w.+@%=,~-]+/)+(?=[\w.+@%=,~-])")
_BAR = re.compile(r"\|[\u2580-\u259f #]*[\u2580-\u259f#][\u2580-\u259f #]*\||\|\s{4,}\|")  # tqdm bars
_UUID = re.compile(r"[0-9a-fA-F](?<!\w[0-9a-fA-F])[0-9a-fA-F]{7}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")
_DATE = re.compile(r"\d(?<!\w\d)(?:\d{3}-\d)?\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?(?:Z|[+-]\d\d:?\d\d)?\b")
_IP4 = re.compile(r"\d(?<![\w.:]\d)\d{0,2}\.\d{1,3}\.\d{1,3}\.\d{1,3}(?::\d{1,5})?\b")
_IP6 = re.compile(r"\[[0-9a-fA-F]*:[0-9a-fA-F:]*\](?::\d{1,5})?")
_CLOCK = re.compile(r"\d(?<!\w\d)\d?:\d\d(?::\d\d(?:[.,]\d+)?)?\b")
_HEX0X = re.compile(r"\b0x[0-9a-fA-F]+\b")
_HEXRUN = re.compile(r"[0-9a-f](?<!\w[0-9a-f])[0-9a-f]{7,}\b")  # kept only when it mixes digits and letters
_GPU = re.compile(r"\bNVIDIA[ _](?:GeForce[ _]|RTX[ _])?[A-Z]{0,3}\d{2,4}\w*(?:[ _]\d+GB)?(?:[ _]HBM\w+)?")
_SIZE = re.compile(r"\d(?<![\w.]\d)\d*(?:\.\d+)?\s?(?:[KMGTP]i?B|bytes)\b")
_RANK = re.compile(r"\b(?:TP|DP|PP|EP|CP|ATTN_CP|MOE_DP)\d+\b|\b(?:[Rr]ank|RANK|GPU|gpu|cuda|[Dd]evice|node)"
                   r"(?:[_ ]?id)?[ =:#_]?\d+\b")
_RANK_WORDS = ("ank", "ANK", "GPU", "gpu", "cuda:", "cuda ", "evice", "node")
# Cheap tests (each pattern starts with a literal) that say whether a mask can match at all.
_UUID_HINT = re.compile(r"-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-")
_DATE_HINT = re.compile(r"-\d\d[T ]\d\d:")
_CLOCK_HINT = re.compile(r":\d\d")
_HEX_HINT = re.compile(r"\d[a-f]")  # a run mixing digits and hex letters has one (or reads "abc123": kept)
_P_DIGIT = re.compile(r"P\d")  # TP3, DP0, ATTN_CP1
_NUM = re.compile(r"\d(?<![A-Za-z0-9_.]\d)\d*(?:\.\d+)*(?:[eE][-+]?\d+)?")
_NUMS = re.compile(r"<NUM>(?:,\s*<NUM>)+")  # lists of any length: [1, 2, 4, 8] -> [<NUMS>]
_DIGIT = re.compile(r"\d")
_DIGITS = re.compile(r"\d+")


_LETTERS = frozenset("abcdef")
_DIGITS_SET = frozenset("0123456789")
# Each pattern starts with a plain character class and checks what precedes it with a
# lookbehind after that first character: the regex engine can then skip ahead to candidate
# characters, several times faster than a pattern that starts with \b or a lookbehind.


def _hexrun(m: re.Match[str]) -> str:
    s = m.group()
    return "<HEX>" if not _LETTERS.isdisjoint(s) and not _DIGITS_SET.isdisjoint(s) else s


def mask(message: str) -> str:
    """The message with its run-specific parts replaced by `<NUM>`, `<PATH>/`, `<IP>` ... masks.

    The masks apply in a fixed order (later ones see the earlier masks); each runs only when
    a cheap test says it can match. Only the first MAX_MASKED characters count (a template
    only uses the first tokens); repeated messages (the same traceback from eight ranks)
    come from a bounded cache.
    """
    if len(message) > MAX_MASKED:
        message = message[:MAX_MASKED].rsplit(" ", 1)[0]  # no partial last token
    return _mask(message)


def clear_cache() -> None:
    """Forget the cached masks (a benchmark measures masking from cold)."""
    _mask.cache_clear()


@lru_cache(maxsize=8192)
def _mask(message: str) -> str:
    text = message
    if "://" in text:
        text = _URL.sub("<URL>", text)
    if "|" in text:
        text = _BAR.sub("|<BAR>|", text)
    if len(text) >= 48:
        text = _B64.sub("<B64>", text)
    if _DIGIT.search(text) is None:
        return _PATH.sub("<PATH>/", text) if "/" in text else text
    if "-" in text and _UUID_HINT.search(text):
        text = _UUID.sub("<UUID>", text)
    if "-" in text and _DATE_HINT.search(text):
        text = _DATE.sub("<TIME>", text)
    if text.count(".") >= 3:
        text = _IP4.sub("<IP>", text)
    colon = ":" in text
    if colon and "[" in text:
        text = _IP6.sub("<IP>", text)
    if colon and _CLOCK_HINT.search(text):
        text = _CLOCK.sub("<TIME>", text)
    if "/" in text:
        text = _PATH.sub("<PATH>/", text)
    if "0x" in text:
        text = _HEX0X.sub("<HEX>", text)
    if _HEX_HINT.search(text):
        text = _HEXRUN.sub(_hexrun, text)
    if "NVIDIA" in text:
        text = _GPU.sub("<GPU>", text)
    if "B" in text or "bytes" in text:
        text = _SIZE.sub("<SIZE>", text)
    if _P_DIGIT.search(text) or any(w in text for w in _RANK_WORDS):
        text = _RANK.sub("<RANK>", text)
    text = _NUM.sub("<NUM>", text)
    if "<NUM>," in text:
        text = _NUMS.sub("<NUMS>", text)
    return text


def split(masked: str, max_tokens: int = 48) -> tuple[str, ...]:
    """A masked message as tokens (split on white space), cut to `max_tokens` (then ending in `<+>`)."""
    toks = masked.split()
    if len(toks) > max_tokens:
        del toks[max_tokens:]
        toks.append(TRUNCATED)
    return tuple(toks)


def tokens(message: str, max_tokens: int = 48) -> tuple[str, ...]:
    """`split(mask(message))`."""
    return split(mask(message), max_tokens)


def _route(tok: str) -> str:
    """The branch a token takes in the prefix tree: itself, with digit runs as 0 (`qwen3_vl.py` -> `qwen0_vl.py`)."""
    return _DIGITS.sub("0", tok) if _DIGIT.search(tok) else tok


class Cluster:
    """One template: its tokens (with `<*>` where lines differ), how many lines it took, its id."""

    __slots__ = ("id", "tokens", "size", "_key", "_seen")

    def __init__(self, cid: int, toks: tuple[str, ...], key: tuple, seen: int) -> None:
        self.id = cid
        self.tokens = toks
        self.size = 1
        self._key = key  # its path in the prefix tree
        self._seen = seen  # when it last took a line (for eviction within a full leaf)

    @property
    def template(self) -> str:
        return " ".join(self.tokens)

    def __repr__(self) -> str:
        return f"Cluster({self.id}, {self.template!r}, size={self.size})"


class TemplateMiner:
    """Online template mining with a fixed-depth prefix tree; bounded in clusters and tokens."""

    def __init__(
        self,
        sim_threshold: float = 0.7,
        depth: int = 4,
        max_children: int = 100,
        max_clusters: int = 20_000,
        max_leaf: int = 128,
        max_tokens: int = 48,
        cache_size: int = 16_384,
    ) -> None:
        if depth < 3:
            raise ValueError("depth must be at least 3 (token count, then one token or more)")
        self.sim_threshold = sim_threshold
        self.prefix = depth - 2
        self.max_children = max_children
        self.max_clusters = max(1, max_clusters)
        self.max_leaf = max(1, max_leaf)
        self.max_tokens = max_tokens
        self.cache_size = cache_size
        self._root: dict = {}  # token count -> token -> ... -> leaf (list of clusters)
        self._clusters: OrderedDict[int, Cluster] = OrderedDict()  # least recently used first
        self._cache: dict[str, Cluster] = {}  # exact masked line -> its cluster
        self._next_id = 1
        self.evicted = 0
        self.lines = 0

    def __len__(self) -> int:
        return len(self._clusters)

    @property
    def clusters(self) -> list[Cluster]:
        """The live templates, by id (creation order)."""
        return sorted(self._clusters.values(), key=lambda c: c.id)

    def get(self, cid: int) -> Cluster | None:
        return self._clusters.get(cid)

    # -- learning ------------------------------------------------------------------------
    def add(self, message: str) -> Cluster:
        """Mine one message; returns the template that took it (new or existing)."""
        return self.add_masked(mask(message))

    def add_masked(self, masked: str) -> Cluster:
        """Mine one message already passed through `mask()` (mask once, use it in several miners)."""
        self.lines += 1
        c = self._cache.get(masked)
        if c is not None and c.id in self._clusters:
            c.size += 1
            c._seen = self.lines
            self._clusters.move_to_end(c.id)
            return c
        toks = split(masked, self.max_tokens)
        leaf, key = self._leaf_for_add(toks)
        best = self._best(leaf, toks)
        if best is None:
            if len(leaf) >= self.max_leaf:
                self._drop(min(leaf, key=lambda x: x._seen), prune=False)  # a crowded leaf keeps its recent ones
            c = Cluster(self._next_id, toks, key, self.lines)
            self._next_id += 1
            leaf.append(c)
            self._clusters[c.id] = c
            if len(self._clusters) > self.max_clusters:
                self._drop(next(iter(self._clusters.values())))  # the least recently used
        else:
            c = best
            c.size += 1
            c._seen = self.lines
            if c.tokens != toks:
                c.tokens = tuple(a if a == b else WILDCARD for a, b in zip(c.tokens, toks, strict=True))
            self._clusters.move_to_end(c.id)
        if len(self._cache) >= self.cache_size:
            self._cache.clear()
        self._cache[masked] = c
        return c

    def _best(self, leaf: list[Cluster], toks: tuple[str, ...]) -> Cluster | None:
        n = len(toks)
        if n == 0:
            return leaf[0] if leaf else None
        best, best_sim, best_wild = None, -1.0, -1
        # a traceback frame ('File "<PATH>/vision.py", line <NUM>, in forward'): the function is code too
        frame = toks[0] == "File" and n >= 6 and toks[-2] == "in"
        for c in leaf:
            if frame and c.tokens[-1] != toks[-1]:
                continue
            same = wild = 0
            for a, b in zip(c.tokens, toks, strict=True):
                if a == b:
                    same += 1
                elif a == WILDCARD:
                    wild += 1
                elif "/" in a or "/" in b:
                    same = -1
                    break
            if same < 0:
                continue
            sim = same / n
            if sim > best_sim or (sim == best_sim and wild > best_wild):
                best, best_sim, best_wild = c, sim, wild
        return best if best is not None and best_sim >= self.sim_threshold else None

    def _leaf_for_add(self, toks: tuple[str, ...]) -> tuple[list[Cluster], tuple]:
        n = len(toks)
        node: Any = self._root.get(n)  # inner nodes are dicts, the last level's values leaves (lists)
        if node is None:
            node = self._root[n] = {}
        path: list = [n]
        depth = min(self.prefix, n)
        for i in range(depth):
            key = _route(toks[i])
            child: Any = node.get(key)
            if child is None and key != WILDCARD:
                have = len(node)
                if WILDCARD in node:
                    key = key if have < self.max_children else WILDCARD
                elif have + 1 >= self.max_children:
                    key = WILDCARD
                child = node.get(key)
            if child is None:
                child = node[key] = [] if i == depth - 1 else {}
            path.append(key)
            node = child
        if depth == 0:
            leaf = node.get("")
            if leaf is None:
                leaf = node[""] = []
            path.append("")
            return leaf, tuple(path)
        return node, tuple(path)

    def _drop(self, c: Cluster, prune: bool = True) -> None:
        del self._clusters[c.id]
        self.evicted += 1
        nodes = [self._root]
        for key in c._key[:-1]:
            nodes.append(nodes[-1][key])
        leaf = nodes[-1][c._key[-1]]
        leaf.remove(c)
        if not prune:
            return
        # drop the branches left empty, so the tree stays as small as the clusters
        keys = list(c._key)
        child = leaf
        while not child and keys:
            key = keys.pop()
            parent = nodes[len(keys)]
            del parent[key]
            child = parent

    # -- inference -----------------------------------------------------------------------
    def match(self, message: str) -> Cluster | None:
        """The known template this message fits (every non-wildcard token equal), or None: novel."""
        return self.match_masked(mask(message))

    def match_masked(self, masked: str) -> Cluster | None:
        c = self._cache.get(masked)
        if c is not None and c.id in self._clusters:
            return c
        toks = split(masked, self.max_tokens)
        node = self._root.get(len(toks))
        if node is None:
            return None
        depth = min(self.prefix, len(toks))
        if depth == 0:
            leaf = node.get("")
            return leaf[0] if leaf else None
        best, best_wild = None, 1 << 30
        for leaf in self._leaves(node, toks, 0, depth):
            for c in leaf:
                wild = 0
                for a, b in zip(c.tokens, toks, strict=True):
                    if a != b:
                        if a != WILDCARD:
                            break
                        wild += 1
                else:
                    if wild < best_wild:
                        best, best_wild = c, wild
        return best

    def _leaves(self, node: dict, toks: tuple[str, ...], i: int, depth: int):
        """The leaves a message can be in: its own branch, then the overflow (`<*>`) branch, at each level."""
        key = _route(toks[i])
        for k in (key, WILDCARD) if key != WILDCARD else (WILDCARD,):
            child = node.get(k)
            if child is None:
                continue
            if i == depth - 1:
                yield child
            else:
                yield from self._leaves(child, toks, i + 1, depth)


def mine(messages: Iterable[str], **options) -> TemplateMiner:
    """A miner fed with every message (a convenience for notebooks and tests)."""
    m = TemplateMiner(**options)
    for msg in messages:
        m.add(msg)
    return m
