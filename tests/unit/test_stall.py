"""A stalled window named by its mechanism (analyze/stall.py) from a real capture: rust_pajamax at
complex_proto C=1 S=1000 answered 740 requests and then nothing, its connection closed; rust_tonic_mt in
the same run answered all window long. The server's HTTP/2 settings come from a real `nghttp -v` call
(measure/connections.py). The replays are two real `nghttp -v -n -m N` calls against rust_pajamax on one
connection each, complex_proto's 83 B message: 789 requests (65,487 B, within the 65,535 B window) and
1,000 (nghttp-replay-*.txt.gz)."""
from __future__ import annotations

import gzip
import json
import socket
from pathlib import Path

from rpcprof.analyze.stall import SPLIT, silent_tail, stall
from rpcprof.measure.connections import H2_INITIAL_WINDOW, established, parse_nghttp, parse_replay, replay_sizes
from rpcprof.report.mechanism import describe

DATA = Path(__file__).resolve().parents[1] / "data" / "stall"


def window(server: str) -> dict:
    return json.loads((DATA / f"{server}-window.json").read_text())


def pajamax_h2() -> dict:
    return parse_nghttp((DATA / "nghttp-rust_pajamax.txt").read_text())


def test_the_servers_settings_are_read_from_nghttp():
    h2 = pajamax_h2()
    assert h2["settings"]["MAX_CONCURRENT_STREAMS"] == 1000
    assert h2["connection_window"] == H2_INITIAL_WINDOW      # it raises no window before its first reply


def test_a_window_update_on_stream_0_raises_the_connection_window():
    text = (DATA / "nghttp-rust_pajamax.txt").read_text()
    at = text.index("\n[", text.index("recv SETTINGS frame")) + 1      # the next frame's line
    extra = ("[  0.006] recv WINDOW_UPDATE frame <length=4, flags=0x00, stream_id=0>\n"
             "          (window_size_increment=1048576)\n")
    assert parse_nghttp(text[:at] + extra + text[at:])["connection_window"] == H2_INITIAL_WINDOW + 1048576


def test_the_stalled_window_is_named_with_its_evidence():
    m = window("rust_pajamax")
    assert silent_tail(m["timeline"]) >= 3.0
    found = stall(m, 1, 1000, 83, m["connections"], pajamax_h2())
    assert found["mechanism"] == "connections closed under HTTP/2 flow control"
    text = describe(found)
    assert "740 requests" in text and "1 of the 1 connection(s)" in text
    assert "83,000 B against the 65,535 B" in text


def test_each_line_of_evidence_goes_with_its_condition():
    m = window("rust_pajamax")
    few = stall(m, 1, 100, 83, m["connections"], pajamax_h2())       # 8,300 B in flight: no flow-control line
    assert few["mechanism"] == "connections closed by the server"
    assert "flow-control" not in describe(few)
    capped = stall(m, 1, 2000, 83, m["connections"], pajamax_h2())
    assert "allows 1,000 concurrent streams on a connection, fewer than the 2,000" in describe(capped)
    still_open = stall(m, 1, 1000, 83, {"start": 1, "end": 1}, None)
    assert still_open["mechanism"] == "no answer on open connections"


def test_a_window_answered_to_its_end_is_not_stalled():
    m = window("rust_tonic_mt")
    assert silent_tail(m["timeline"]) == 0.0
    assert stall(m, 1, 1000, 83, m["connections"], pajamax_h2()) is None


def test_established_counts_the_servers_end_of_a_loopback_connection():
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert established(port) == 0
        with socket.create_connection(("127.0.0.1", port)) as client:
            peer, _ = listener.accept()
            with peer:
                assert established(port) == 1      # the server's end; the client's local port is another
            client.close()


def test_answers_before_the_first_slice_are_said_within_one_slice():
    """Requests answered in the window's first milliseconds may start before its first slice begins: the
    window is then silent throughout, and the answers are placed within its first slice, never at 0.0 s."""
    m = window("rust_pajamax")
    m["timeline"]["req_per_s"] = [0.0] * len(m["timeline"]["req_per_s"])
    text = describe(stall(m, 1, 1000, 83, m["connections"], pajamax_h2()))
    assert f"within the window's first {m['timeline']['slice_s']:.1f} s of" in text


def test_a_record_is_said_again_from_its_figures():
    m = window("rust_pajamax")
    found = json.loads(json.dumps(stall(m, 1, 1000, 83, m["connections"], pajamax_h2())))
    assert "evidence" not in found and describe(found).startswith(f"STALLED ({found['mechanism']}): answers stopped")


def replays() -> list[dict]:
    return [parse_replay(gzip.decompress((DATA / f"nghttp-replay-{n}.txt.gz").read_bytes()).decode(), 83)
            for n in (789, 1000)]


def test_a_replay_within_the_window_splits_nothing_and_is_answered_whole():
    whole, _ = replays()
    assert whole == {"requests": 789, "message_bytes": 83, "answered": 789, "split": None, "goaway": False,
                     "rst_streams": 0}


def test_the_client_splits_the_message_the_window_runs_short_on_and_the_server_drops_the_connection():
    _, over = replays()
    split = over["split"]
    assert split == {"stream": 1791, "sent": 48, "data_before": 73_787, "credited_before": 8_300}
    # the piece is exactly what was left of the window: 65,535 granted + 8,300 credited - 73,787 sent
    assert H2_INITIAL_WINDOW + split["credited_before"] - split["data_before"] == split["sent"]
    assert over["requests"] == 1000 and over["answered"] == 848
    assert not over["goaway"] and over["rst_streams"] == 0


def test_the_replays_fill_the_window_whole_then_overrun_it_up_to_the_servers_streams():
    assert replay_sizes({"MAX_CONCURRENT_STREAMS": 1000}, H2_INITIAL_WINDOW, 83) == (789, 1000)
    assert replay_sizes({}, H2_INITIAL_WINDOW, 83) == (789, 1580)          # two windows' worth
    assert replay_sizes({"MAX_CONCURRENT_STREAMS": 1000}, H2_INITIAL_WINDOW, 12) == ()   # helloworld: cannot run short


def test_the_replays_name_the_mechanism_with_their_figures():
    m = window("rust_pajamax")
    h2 = {**pajamax_h2(), "replays": replays()}
    found = stall(m, 1, 1000, 83, m["connections"], h2)
    assert found["mechanism"] == SPLIT
    text = describe(json.loads(json.dumps(found)))
    assert "789 requests of 83 B (65,487 B): none split, 789 answered" in text
    assert ("73,787 B of DATA sent and 8,300 B credited back left 48 B of the 65,535 B window, and the client sent "
            "stream 1791's 83 B message as a DATA frame of 48 B without END_STREAM") in text
    assert "answered 848 of the 1,000 and ended the connection with neither GOAWAY nor RST_STREAM" in text


def test_a_server_that_drops_whole_messages_too_is_not_named_for_the_split():
    m = window("rust_pajamax")
    whole, over = replays()
    h2 = {**pajamax_h2(), "replays": [{**whole, "answered": 700}, over]}
    assert stall(m, 1, 1000, 83, m["connections"], h2)["mechanism"] == "connections closed under HTTP/2 flow control"
    unfinished = {**pajamax_h2(), "replays": [{"requests": 789, "message_bytes": 83}]}     # nghttp timed out
    assert stall(m, 1, 1000, 83, m["connections"], unfinished)["mechanism"] == "connections closed under HTTP/2 flow control"
