"""Rules and the leaf-first walk, as (frame, expected category) tables."""
import textwrap

import pytest
from hypothesis import given
from hypothesis import strategies as st

from rpcprof.analyze.categorize import (OTHER, categorize, check_examples, group_of, load_rules, normalize_frame,
                                strip_generics)
from rpcprof.errors import UserError

RULES = load_rules()


@pytest.mark.parametrize("raw, stripped", [
    ("core::ptr::drop_in_place<tonic::codec::decode::StreamingInner>", "core::ptr::drop_in_place"),
    ("<a::greeter_server::GreeterServer<T> as tower_service::Service<http::request::Request<B>>>::call::{{closure}}",
     "<a::greeter_server::GreeterServer as tower_service::Service>::call::{{closure}}"),
    ("prost::encoding::<impl prost::encoding::sealed::BytesAdapter for alloc::vec::Vec<u8>>::replace_with",
     "prost::encoding::<impl prost::encoding::sealed::BytesAdapter for alloc::vec::Vec>::replace_with"),
    ("iter::collect::<Vec<u8>>", "iter::collect"),
    ("f<Box<dyn Fn() -> u8>>::g", "f::g"),
    ("tcp_recvmsg_locked", "tcp_recvmsg_locked"),
])
def test_generic_argument_lists_are_stripped_but_qualified_paths_stay(raw, stripped):
    assert strip_generics(raw) == stripped


def strip_by_character(name: str) -> str:
    """strip_generics's rule read one character at a time: the reference its faster copy is checked against."""
    import re
    out, i, n = [], 0, len(name)
    while i < n:
        ch = name[i]
        if ch == "<":
            prev = name[i - 1] if i else ""
            after_colons = name.endswith("::", 0, i)
            if re.match(r"[A-Za-z0-9_]", prev) or (after_colons and not name.startswith("impl ", i + 1)):
                depth, j = 0, i
                while j < n:
                    if name[j] == "<":
                        depth += 1
                    elif name[j] == ">" and name[j - 1] != "-":
                        depth -= 1
                        if depth == 0:
                            break
                    j += 1
                i = j + 1
                if after_colons and out[-2:] == [":", ":"]:
                    del out[-2:]
                continue
        out.append(ch)
        i += 1
    return "".join(out)


def test_strip_generics_is_its_rule_on_every_frame_of_the_captures():
    from pathlib import Path

    from rpcprof.analyze.categorize import open_folded
    data = Path(__file__).resolve().parents[1] / "data"
    frames = {f for path in [*data.glob("*.folded.gz"), data / "hostile.folded"]
              for stack, _ in open_folded(path) for f in stack}
    assert sum("<" in f for f in frames) > 100
    for f in frames:
        assert strip_generics(f) == strip_by_character(f), f


@given(st.text(alphabet="<>:-_ aimplT1é", max_size=40))
def test_strip_generics_is_its_rule_on_any_text(name):
    assert strip_generics(name) == strip_by_character(name)


def test_kernel_suffix_marks_a_kernel_frame():
    assert normalize_frame("tcp_sendmsg_[k]") == ("tcp_sendmsg", True)
    assert normalize_frame("tcp_sendmsg") == ("tcp_sendmsg", False)


@pytest.mark.parametrize("frame, category", [
    # kernel socket layer decides the direction, whatever the user-space symbol says
    ("tcp_recvmsg_locked_[k]", "recv"),
    ("__x64_sys_recvfrom_[k]", "recv"),
    ("do_writev_[k]", "send"),
    ("tcp_sendmsg_[k]", "send"),
    ("do_epoll_wait_[k]", "runtime"),
    ("futex_wait_[k]", "runtime"),
    # a kernel rule does not match a user frame of the same name, and vice versa
    ("tcp_recvmsg", None),
    ("recvfrom_[k]", None),
    # std's shared socket symbol: direction from the name, not the socket type
    ("<std::os::unix::net::datagram::UnixDatagram>::recv", "recv"),
    ("<std::net::tcp::TcpStream as std::io::Write>::write", "send"),
    ("tokio::runtime::scheduler::current_thread::Context::run_task", "runtime"),
    ("mio::poll::Poll::poll", "runtime"),
    ("h2::hpack::decoder::Decoder::decode", "protocol"),
    ("pajamax::hpack_decoder::Decoder::find_path", "protocol"),
    ("<rust_tonic::helloworld::greeter_server::GreeterServer<rust_tonic::HelloGreeter> as "
     "tower_service::Service<http::request::Request<B>>>::call::{{closure}}", "protocol"),
    ("runtime.findRunnable", "runtime"),
    ("runtime.newstack", "runtime"),
    ("google.golang.org/grpc/internal/transport.(*http2Server).operateHeaders", "protocol"),
    ("v8::internal::Scavenger::ScavengeObject<v8::internal::FullHeapObjectSlot>", "runtime"),
    ("_status (grpc/_server.py:766)", "protocol"),
    # helpers match nothing, so they fall to their caller
    ("malloc", None),
    ("__memmove_avx512_unaligned_erms", None),
    ("Builtins_KeyedLoadIC_Megamorphic", None),
    ("finish_task_switch.isra.0_[k]", None),
])
def test_frame_is_decided_by_the_expected_category(frame, category):
    hit = RULES.classify_frame(frame)
    assert (hit[0] if hit else None) == category


def test_app_pattern_is_matched_after_stripping_generics():
    rules = RULES.with_app(r"my_server::MyGreeter\b")
    # generic arguments naming the app type must not make a framework frame look like the app
    assert rules.classify_frame("core::ptr::drop_in_place<tonic::X<my_server::MyGreeter>>") is None
    assert rules.classify_frame("<my_server::MyGreeter as x::Greeter>::say_hello")[0] == "app"


def decided(rules, frames: list[str]) -> tuple[str, str]:
    """(group, the frame `top` counts the stack under) of one stack, as categorize() counts it."""
    [(group, frame)] = [(g, f) for g, fs in categorize([(frames, 1)], rules).by_frame.items() for f in fs]
    return group, frame


def test_leaf_frame_decides_category():
    rules = RULES.with_app(r"my_server::handler")
    # root ... protocol ... app ... helper(leaf): the app frame is the nearest classified one
    stack = ["thread", "tokio::runtime::task::raw::poll", "h2::proto::streams::Recv::recv", "my_server::handler",
             "alloc::fmt::format::format_inner", "malloc"]
    assert decided(rules, stack) == ("app", "my_server::handler")
    # a send syscall under the protocol code is send
    stack = ["thread", "h2::codec::framed_write::FramedWrite::flush", "__GI___writev", "do_writev_[k]",
             "copy_user_generic_[k]"]
    assert decided(rules, stack) == ("send", "do_writev_[k]")


def test_stack_with_no_matching_frame_is_other_counted_under_its_leaf():
    assert decided(RULES, ["thread", "mystery", "malloc"]) == (OTHER, "malloc")


def test_categorize_sums_weights_per_category():
    folded = ["t;h2::codec::FramedRead::poll;tcp_recvmsg_[k] 30", "t;h2::codec::FramedRead::poll 50",
              "t;mystery 20"]
    b = categorize([(s.split(';'), int(w)) for s, _, w in (line.rpartition(' ') for line in folded)], RULES)
    assert b.weights["recv"] == 30 and b.weights["protocol"] == 50 and b.weights[OTHER] == 20
    assert b.total == 100 and b.samples == 10          # gcd of the weights is one sample's weight
    assert sum(b.share(c) for c in RULES.all_categories) == pytest.approx(1.0)


def test_every_rule_decides_its_own_examples():
    assert check_examples(RULES) == []


def write_rules(tmp_path, body):
    path = tmp_path / "categorize.yaml"
    path.write_text(textwrap.dedent(body))
    return path


GOOD_APP = """
categories:
  - name: app
    color: "#00ff00"
    rules: []
"""


@pytest.mark.parametrize("body, message", [
    (GOOD_APP + """
  - name: recv
    color: "#0000ff"
    rules:
      - name: broken
        match: 'tcp_(recv'
        examples: [tcp_recv]
""", "rule 'broken' in recv: invalid regex"),
    (GOOD_APP + """
  - name: recv
    color: "#0000ff"
    rules:
      - name: r
        match: 'x'
        examples: [x]
        colour: red
""", "key 'categories[recv].rules[r]' has unknown key(s) colour (known: examples, level, match, name, sub, where)"),
    (GOOD_APP + """
  - name: recv
    color: "#0000ff"
    rules:
      - name: r
        examples: [x]
""", "key 'categories[recv].rules[r]' has no key 'match'"),
    (GOOD_APP + """
  - name: app
    color: "#0000ff"
    rules: []
""", "category 'app' is defined twice"),
    ("categories: 3\n", "key 'categories' must be a list, got a number"),
    ("other_color: '#000000'\n", "missing key 'categories'"),
    (GOOD_APP + """
  - name: recv
    color: "#0000ff"
    subcategories: [{name: tcp}, {name: tcp}]
    rules: []
""", "category 'recv': sub-category tcp is declared twice"),
    (GOOD_APP + """
  - name: recv
    color: "#0000ff"
    subcategories: [{name: TCP}]
    rules: []
""", "key 'categories[recv].subcategories[TCP].name' must be a lower-case word"),
    ("categories: [\n", "invalid YAML"),
])
def test_invalid_rules_file_is_one_line_naming_the_problem(tmp_path, body, message):
    with pytest.raises(UserError) as e:
        load_rules(write_rules(tmp_path, body))
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_rule_shadowed_by_an_earlier_rule_is_reported(tmp_path):
    path = write_rules(tmp_path, GOOD_APP + """
  - name: recv
    color: "#0000ff"
    rules:
      - name: broad
        match: 'tcp_'
        examples: [tcp_recvmsg]
  - name: send
    color: "#ff0000"
    rules:
      - name: never
        match: '^tcp_sendmsg$'
        examples: [tcp_sendmsg]
""")
    problems = check_examples(load_rules(path))
    assert len(problems) == 1 and "'never' in send" in problems[0] and "shadowed" in problems[0]


# --- level 2 and the tax view ------------------------------------------------------------------

LAYERED = GOOD_APP + """
  - name: send
    color: "#ff9800"
    subcategories:
      - {name: syscall, description: the syscall path}
      - {name: tcp, description: TCP below it}
      - {name: loopback, description: the peer's receive}
    rules:
      - name: tcp
        where: kernel
        sub: tcp
        match: '^tcp_sendmsg$'
        examples: ["tcp_sendmsg_[k]"]
      - name: sys
        where: kernel
        sub: syscall
        match: '^__x64_sys_sendto$'
        examples: ["__x64_sys_sendto_[k]"]
      - name: loopback
        where: kernel
        level: 2
        sub: loopback
        match: '^net_rx_action$'
        examples: ["net_rx_action_[k]"]
  - name: protocol
    color: "#9c27b0"
    subcategories:
      - {name: http2, description: h2}
      - {name: protobuf, description: prost}
    rules:
      - name: h2
        sub: http2
        match: '^h2::'
        examples: ["h2::codec::encode"]
      - name: prost
        sub: protobuf
        match: '^prost::'
        examples: ["prost::encoding::encode_varint"]
      - name: bytes
        match: '^bytes::'
        examples: ["bytes::BytesMut::put_slice"]
tax:
  rest: everything-else
  groups:
    - name: data-movement
      color: "#26a69a"
      rules:
        - name: memcpy
          match: '^memcpy$'
          examples: [memcpy]
    - name: syscall-entry
      color: "#78909c"
      rules:
        - name: entry
          where: kernel
          match: '^entry_SYSCALL_64$'
          examples: ["entry_SYSCALL_64_[k]"]
"""

STACKS = [
    # send decided by tcp_sendmsg; net_rx_action below it (skipped by level 1) makes it send/loopback
    ("main;entry_SYSCALL_64_[k];__x64_sys_sendto_[k];tcp_sendmsg_[k];net_rx_action_[k];tcp_v4_rcv_[k]", 5,
     "send", "send/loopback", "everything-else"),
    ("main;entry_SYSCALL_64_[k];__x64_sys_sendto_[k];tcp_sendmsg_[k]", 3, "send", "send/tcp", "everything-else"),
    # a sample in the syscall entry itself: no category frame below it; the tax walk sees the whole stack
    ("main;entry_SYSCALL_64_[k]", 2, "other", "other", "syscall-entry"),
    # bytes decides the category but not the sub-category: its caller prost does; memcpy is the tax
    ("main;h2::codec::encode;prost::encoding::encode_varint;bytes::BytesMut::put_slice;memcpy", 7,
     "protocol", "protocol/protobuf", "data-movement"),
    # memcpy rootward of the deciding frame is not the leaf's work
    ("main;memcpy;h2::codec::encode;h2::frame::head", 4, "protocol", "protocol/http2", "everything-else"),
    ("main;bytes::BytesMut::put_slice", 1, "protocol", "protocol/other", "everything-else"),
]


@pytest.mark.parametrize("stack, weight, level1, level2, tax", STACKS)
def test_level2_and_tax_walks(tmp_path, stack, weight, level1, level2, tax):
    rules = load_rules(write_rules(tmp_path, LAYERED))
    frames = stack.split(";")
    assert group_of(frames, rules) == level1
    assert group_of(frames, rules.using(level=2)) == level2
    assert group_of(frames, rules.using(view="tax")) == tax


def test_level2_groups_sum_to_their_level1_category(tmp_path):
    rules = load_rules(write_rules(tmp_path, LAYERED))
    stacks = [(s.split(";"), w) for s, w, *_ in STACKS]
    one, two = categorize(stacks, rules), categorize(stacks, rules.using(level=2))
    assert two.total == one.total
    for cat in rules.all_categories:
        assert sum(two.weights[g] for g in rules.using(level=2).all_categories if g.split("/")[0] == cat) == \
            one.weights[cat]
    assert two.weights["send/loopback"] == 5 and two.weights["protocol/other"] == 1
    tax = categorize(stacks, rules.using(view="tax"))
    assert tax.weights == {"data-movement": 7, "syscall-entry": 2, "everything-else": 13}


def test_level2_colours_are_shades_of_their_category(tmp_path):
    rules = load_rules(write_rules(tmp_path, LAYERED)).using(level=2)
    shades = [rules.colors[g] for g in rules.groups_of("send")]
    assert len(set(shades)) == 4 and all(c.startswith("#") and len(c) == 7 for c in shades)
    assert rules.colors["app"] == "#00ff00"


@pytest.mark.parametrize("extra, message", [
    ("        sub: tcp\n", "sub 'tcp' is not one of protocol's subcategories"),
    ("        level: 2\n", "a level-2 rule needs a `sub`"),
])
def test_bad_sub_or_level_is_one_line(tmp_path, extra, message):
    body = LAYERED.replace("        match: '^bytes::'\n", "        match: '^bytes::'\n" + extra)
    with pytest.raises(UserError) as e:
        load_rules(write_rules(tmp_path, body))
    assert message in str(e.value) and "\n" not in str(e.value)


def test_sub_rule_shadowed_at_level2_is_reported(tmp_path):
    body = LAYERED.replace("        match: '^net_rx_action$'", "        match: '^(net_rx_action|tcp_sendmsg)$'")
    body = body.replace('examples: ["net_rx_action_[k]"]', 'examples: ["net_rx_action_[k]", "tcp_sendmsg_[k]"]')
    body = body.replace("      - name: tcp\n", "      - name: loopback-first\n        where: kernel\n        level: 2\n"
                        "        sub: loopback\n        match: '^tcp_sendmsg$'\n        examples: [\"tcp_sendmsg_[k]\"]\n"
                        "      - name: tcp\n", 1)
    problems = check_examples(load_rules(write_rules(tmp_path, body)))
    assert any("rule 'tcp' in send (sub tcp)" in p and "loopback-first" in p for p in problems), problems


def test_unknown_level_or_view_is_one_line():
    with pytest.raises(UserError, match="--level 3"):
        RULES.using(level=3)
    with pytest.raises(UserError, match="--view 'cost'"):
        RULES.using(view="cost")


def test_top_frames_are_the_heaviest_ties_by_name():
    """Breakdown.top_frames is heapq.nsmallest by (-weight, name), the order `top` prints, for every limit, with
    many frames tied at the limit's weight (a fleet's distinct leaves weigh a few samples each)."""
    import heapq
    import random
    from rpcprof.analyze.categorize import Breakdown
    rng = random.Random(5)
    frames = {f"f{rng.randrange(10**6)}": rng.choice([1, 1, 2, 3, 3, 7, 40]) for _ in range(3000)}
    b = Breakdown({}, 0, 0, {"other": frames}, 0)
    for limit in [0, 1, 2, 5, 20, 500, 2999, 3000, 5000]:
        want = heapq.nsmallest(limit, frames.items(), key=lambda kv: (-kv[1], kv[0]))
        assert b.top_frames("other", limit) == want, limit
    assert b.top_frames("send", 20) == []
