"""A UTF-16 log (Windows-saved, with a byte-order mark): `tail FILE` decodes it as `analyze` does."""

from __future__ import annotations

import json
import time

import pytest
from journal_helpers import oom_tail, rule_pack, sglang, startup

from logsense.commands import tail
from logsense.sources.follow import FileFollower, count_lines, last_line_offset
from logsense.sources.recorded import TextCodec, codec_of

ENCODINGS = [pytest.param("utf-16-le", id="le"), pytest.param("utf-16-be", id="be")]


def utf16(text: str, encoding: str) -> bytes:
    return "\ufeff".encode(encoding) + text.encode(encoding)


def lines(items, end: str = "\n") -> str:
    return "".join(m + end for _, m in items)


def run(capsys, pack, path) -> tuple[int, list[dict]]:
    code = tail.main(target=str(path), fmt="jsonl", only_rules=[str(pack)], follow=False, classifier=False)
    return code, [json.loads(x) for x in capsys.readouterr().out.splitlines()]


def _comparable(events: list[dict]) -> list[dict]:
    return [{k: v for k, v in e.items() if k not in ("target", "start", "description", "source")} for e in events]


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_tail_reads_a_utf16_file_as_its_utf8_twin(tmp_path, capsys, encoding):
    pack = rule_pack(tmp_path)
    text = lines(startup() + oom_tail(), end="\r\n")
    plain, wide = tmp_path / "plain.log", tmp_path / "wide.log"
    plain.write_bytes(text.encode("utf-8"))
    wide.write_bytes(utf16(text, encoding))
    code, ev = run(capsys, pack, plain)
    wide_code, wide_ev = run(capsys, pack, wide)
    assert code == wide_code == 1
    assert _comparable(wide_ev) == _comparable(ev)
    assert any(e["event"] == "diagnosis" and e["diagnosis"]["cause"] == "cuda_oom_cuda_graph" for e in wide_ev)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_tail_starts_at_the_latest_startup_of_a_utf16_file(tmp_path, capsys, encoding):
    pack = rule_pack(tmp_path)
    earlier = [(0.0, sglang(1_000.0, "server_args=ServerArgs(model_path='/old')")), (1.0, "an old line")]
    p = tmp_path / "wide.log"
    p.write_bytes(utf16(lines(earlier + startup() + oom_tail()), encoding))
    code, ev = run(capsys, pack, p)
    assert code == 1 and "latest startup" in ev[0]["start"]
    first_line = len(earlier) + 1
    offset = last_line_offset(str(p), ["server_args="], lambda t: "ServerArgs(" in t)
    assert offset is not None and count_lines(str(p), offset) == first_line - 1
    assert p.read_bytes()[offset:].decode(encoding).startswith(startup()[0][1])


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_the_follower_decodes_utf16_written_in_pieces(tmp_path, encoding):
    p = tmp_path / "wide.log"
    data = utf16("first line\r\nsecond: \u0a05\u4e00 done\nthird\n", encoding)
    p.write_bytes(b"")
    f = FileFollower(str(p), offset=0, partial_timeout=5)
    got: list[tuple[int, str]] = []
    for cut in (1, 2, 7, 30, len(data)):  # odd cuts: half a character waits for its other half
        with open(p, "ab") as fh:
            fh.write(data[len(p.read_bytes()) : cut])
        deadline = time.monotonic() + 2
        while time.monotonic() < deadline:
            got.extend(f.read(0.02))
            if cut < len(data) or len(got) == 3:
                break
    assert got == [(1, "first line\r"), (2, "second: \u0a05\u4e00 done"), (3, "third")]
    assert f.position()["offset"] == len(data)
    f.close()


def test_a_newline_across_two_characters_is_no_line_end():
    codec = codec_of(b"\xff\xfe")
    data = "\u0a05\u4e00\n".encode("utf-16-le")  # 05 0a 00 4e 0a 00: b"\n\x00" at an odd offset first
    assert data.find(codec.newline) == 1
    assert codec.find_newline(data, 0) == 4 and codec.rfind_newline(data, 4) == -1
    assert codec_of(b"abc") == TextCodec() and codec.decode("\ufeffx".encode("utf-16-le"), first=True) == "x"
