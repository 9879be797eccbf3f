"""How many samples each round's profile window plans for, so that a server's rounds together reach
--min-samples (jobs/base.py round_sample_target), and the rate and duration that follow (ProfilePlan)."""
from rpcprof.capture.profiler import ProfilePlan
from rpcprof.jobs.base import round_sample_target


def test_the_first_round_plans_its_share():
    assert round_sample_target(5000, 5, []) == 1000
    assert round_sample_target(5000, 1, []) == 5250        # one round is the last: 5 % over


def test_the_last_round_plans_a_margin_over_what_is_missing():
    # four rounds that reached their plans exactly: the fifth aims 5 % over the 1,000 left
    assert round_sample_target(5000, 5, [(1000, 1000)] * 4) == 1050
    assert round_sample_target(5000, 5, [(1000, 1000)] * 3) == 1000
    assert round_sample_target(5000, 5, [(1250, 1000)] * 4) == 0


def test_later_rounds_make_up_what_earlier_ones_missed_and_how_far_they_fell_short():
    # pajamax in the README's first command: 973 samples where 1,100 were planned
    target = round_sample_target(5000, 5, [(973, 1100)])
    assert target == -(-(5000 - 973) * 1100 // (4 * 973))          # 4,027 left over 4 rounds, x 1100/973
    # rounds that reach what they plan leave the share as it was; ones that overshoot plan less
    assert round_sample_target(5000, 5, [(1000, 1000)]) == 1000
    assert round_sample_target(5000, 5, [(1500, 1000), (1500, 1000)]) == 667
    assert round_sample_target(5000, 5, [(3000, 1000), (3000, 1000)]) == 0


# pajamax's yields (samples taken / samples planned) in the 5 rounds of each of 16 runs of the README's command
# (2026-11-29, one host, rounds in order; from each round's result.json: samples, server_cpu_cores, frequency_hz)
YIELDS = [
    (0.82, 0.64, 0.97, 0.67, 0.85),
    (1.17, 1.07, 0.80, 1.04, 1.13),
    (1.02, 1.12, 0.85, 0.83, 0.72),
    (1.05, 0.78, 0.71, 0.74, 0.94),
    (0.78, 0.72, 1.17, 1.12, 1.05),
    (1.01, 0.97, 1.50, 0.65, 0.84),
    (0.73, 0.75, 0.83, 0.89, 0.94),
    (1.08, 1.02, 1.10, 0.89, 0.83),
    (0.87, 0.83, 0.69, 0.73, 1.12),
    (0.78, 0.70, 1.19, 0.97, 0.92),
    (0.64, 1.10, 1.04, 1.00, 1.01),
    (1.11, 0.77, 1.06, 1.08, 1.62),
    (0.92, 0.87, 0.99, 0.91, 0.93),
    (0.90, 0.85, 0.94, 0.85, 0.98),
    (0.88, 1.29, 1.24, 0.88, 0.51),
    (0.99, 0.96, 1.04, 0.86, 0.79),
]


def test_rounds_whose_yields_spread_plan_for_the_low_end():
    assert round_sample_target(5000, 5, [(900, 1000), (1100, 1000)]) > round_sample_target(5000, 5, [(1000, 1000)] * 2)
    # replayed on the recorded yields: each round's plan (its rate raised for a server at 10 % of a CPU), then
    # the samples its yield gives; planned on the rounds' total shortfall, 5 of the 16 runs ended short of 5,000
    short = []
    for run in YIELDS:
        earlier = []
        for y in run:
            planned = ProfilePlan.for_load(0.1, 999, 5.0, round_sample_target(5000, 5, earlier)).expected_samples
            earlier.append((round(y * planned), planned))
        if (total := sum(s for s, _ in earlier)) < 5000:
            short.append(total)
    assert not short, short


def test_a_plan_for_the_corrected_target_raises_the_rate_to_reach_it():
    """pajamax at 11.5 % of a CPU, 5 s windows: the share alone asks 1,913 Hz, the corrected one more."""
    first = ProfilePlan.for_load(0.1154, 999, 5.0, round_sample_target(5000, 5, []), max_frequency=4999)
    second = ProfilePlan.for_load(0.1154, 999, 5.0, round_sample_target(5000, 5, [(973, first.expected_samples)]),
                                  max_frequency=4999)
    assert second.frequency > first.frequency
    assert second.expected_samples * 973 / first.expected_samples >= (5000 - 973) / 4


def test_the_shortfall_scale_is_bounded_and_a_round_without_samples_does_not_divide_by_zero():
    assert round_sample_target(5000, 5, [(0, 1000)]) == 2500           # a yield of 0 plans for 0.5
    assert round_sample_target(5000, 5, [(100, 1000)]) == -(-4900 * 2 // 4)
    assert round_sample_target(5000, 5, [(1000, 0)]) == 1000


def test_a_jit_servers_warm_up_is_raised_and_cut_into_windows_on_new_connections():
    from rpcprof.jobs.steps import WARMUP_PIECE_S, warmup_windows
    assert warmup_windows(2.0, 0) == [2.0]                   # any other server: the warm-up asked, one window
    assert warmup_windows(0, 0) == []
    assert warmup_windows(2.0, 20) == [WARMUP_PIECE_S] * 4    # java_grpc: raised to 20 s, 4 windows of 5 s
    assert warmup_windows(23.0, 20) == [5.0, 5.0, 5.0, 5.0, 3.0]


def test_the_last_warm_up_window_leads_the_measured_one_on_its_own_connections(tmp_path):
    """h2load drives the last warm-up window as the measured window's lead (--warm-up-time), so the measured
    window begins on connections already under load; ghz, which cannot, drives every window apart."""
    from rpcprof.jobs.steps import Subject, warm_up
    from rpcprof.measure.load import Ghz, H2load, LoadSettings
    from rpcprof.measure.scenario import SCENARIOS

    class Driven:
        def __init__(self, kind):
            self.kind, self.windows = kind, []

        def __getattr__(self, name):
            return getattr(self.kind, name)

        def run(self, settings, *args, **kwargs):
            self.windows.append(settings.duration)

    settings = LoadSettings(connections=1, streams=1000, duration=4.0, cpus=[1])
    for kind, lead in ((H2load, 5.0), (Ghz, 0.0)):
        driver = Driven(kind)
        subject = Subject("s", 1, None, tmp_path, driver, settings, 50051, 1, (1,))
        warm_up(subject, [5.0] * 4)
        assert subject.lead == lead and driver.windows == [5.0] * (4 - (lead > 0))
        subject = Subject("s", 1, None, tmp_path, Driven(kind), settings, 50051, 1, (1,))
        warm_up(subject, [])
        assert subject.lead == 0.0
    h2load = H2load(SCENARIOS["helloworld"], tmp_path)
    argv = h2load.argv(settings, 50051, tmp_path / "log")
    assert "--warm-up-time" not in argv
    argv = h2load.argv(LoadSettings(1, 1000, 4.0, [1], lead=2.5), 50051, tmp_path / "log")
    assert argv[argv.index("--warm-up-time") + 1] == "2500ms" and argv[argv.index("-D") + 1] == "4000ms"
