"""measure/windows.py: when a measured window is too short for the CPU per request printed from it."""
from rpcprof.measure.windows import too_short


def window(ok, seconds=4.0, cpu_us=1.0):
    return {"requests_ok": ok, "window_s": seconds, "cpu_us_per_req": cpu_us, "server_cpu_s": ok * cpu_us / 1e6}


def test_a_near_stall_is_named_with_the_time_each_request_took():
    # seed 000's sweep, pajamax at C=1 S=1000 with complex_proto: 740 requests in 4 s, 1,000 in flight
    why = too_short(window(740), 1000)
    assert why.startswith("the 4 s window counted 740 requests with 1000 more in flight at its end (135 %)")
    assert "each request took about 5.41 s (1000 in flight / 185 req/s)" in why
    assert why.endswith("lengthen -d well past that, or lower -S")


def test_a_window_long_enough_is_not_refused():
    assert too_short(window(270_000), 1000) is None


def test_cpu_too_small_to_register_is_its_own_reason():
    why = too_short(window(1000, cpu_us=0.001), 10)
    assert "too short to measure CPU per request" in why


def test_after_a_lead_the_requests_in_flight_at_both_ends_count():
    # 3,000 in flight at each end of a window that counted 20,000: 15 % at its end alone, 30 % with its start
    assert too_short({**window(20_000), "in_flight_share": 0.15, "in_flight_ends": 1}, 3000) is None
    why = too_short({**window(20_000), "in_flight_share": 0.30, "in_flight_ends": 2}, 3000)
    assert why.startswith("the 4 s window counted 20,000 requests with 3000 more in flight at each of its ends (30 %)")
