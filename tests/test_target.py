"""The multipath target: constructor errors, canonical tables, status, messages, failover."""
import pytest

from mpathlab.target import (END_DONE, END_INCOMPLETE, END_REQUEUE, MAP_DELAY_REQUEUE, MAP_KILL,
                             MAP_REMAPPED, MAP_SUBMITTED, MessageError, MpathIO, TargetError, construct,
                             mapping_resolver, parse, table_line)

TABLE_A = "1 queue_if_no_path 0 2 1 service-time 0 2 2 8:16 1 1 8:32 1 1 service-time 0 2 2 8:48 1 1 8:64 1 1"
TABLE_B = "2 queue_mode bio 0 1 1 historical-service-time 0 2 0 8:16 8:32"


# ------------------------------------------------------------ canonical TABLE
@pytest.mark.parametrize("params,table", [
    (TABLE_A, TABLE_A + " "),
    (TABLE_B, "3 retain_attached_hw_handler queue_mode bio 0 1 1 historical-service-time 2 972 0 2 1 8:16 0 8:32 0 "),
    ("0 0 1 1 round-robin 0 2 0 8:16 8:32", "0 0 1 1 round-robin 0 2 1 8:16 1 8:32 1 "),
    ("0 0 1 1 round-robin 0 2 1 8:16 100 8:32 0", "0 0 1 1 round-robin 0 2 1 8:16 1 8:32 0 "),
    ("0 0 0 0", "0 0 0 0 "),
    # features: fixed order, lowercase, queue_mode rq dropped, counts recomputed
    ("7 QUEUE_MODE rq Pg_Init_Delay_Msecs 2000 pg_init_retries 3 Queue_If_No_Path 0 1 1 queue-length 0 1 0 8:0",
     "5 queue_if_no_path pg_init_retries 3 pg_init_delay_msecs 2000 0 1 1 queue-length 0 1 1 8:0 1 "),
    # hardware handler params are never re-emitted
    ("0 3 alua a b 1 1 queue-length 0 1 0 8:0", "0 1 alua 1 1 queue-length 0 1 1 8:0 1 "),
    # bio-based ignores handler words
    ("2 queue_mode bio 1 alua 1 1 queue-length 0 1 0 8:0",
     "3 retain_attached_hw_handler queue_mode bio 0 1 1 queue-length 0 1 1 8:0 1 "),
    ("0 0 1 1 historical-service-time 2 800 3 1 1 8:0 55", "0 0 1 1 historical-service-time 2 800 3 1 1 8:0 0 "),
    ("0 0 1 1 service-time 0 1 1 8:0 7", "0 0 1 1 service-time 0 1 2 8:0 1 1 "),
    ("0 0 1 1 io-affinity 0 2 1 8:16 0f 8:32 f0", "0 0 1 1 io-affinity 0 2 1 8:16 0f 8:32 f0 "),
    # next_pg_num beyond the group count is accepted and selects nothing
    ("0 0 1 5 queue-length 0 1 0 8:0", "0 0 1 1 queue-length 0 1 1 8:0 1 "),
])
def test_canonical_table(params, table):
    assert construct(params).table() == table


def test_table_round_trip_is_a_fixed_point():
    for params in (TABLE_A, TABLE_B, "0 0 1 1 round-robin 0 2 0 8:16 8:32"):
        once = construct(params).table()
        assert construct(once).table() == once


def test_full_line_and_device_names():
    res = mapping_resolver({"sdb": (8, 16), "sdc": (8, 32)})
    m = parse("0 2097152 multipath 0 0 1 1 queue-length 0 2 1 /dev/sdb 1 sdc 1", resolve_device=res)
    assert table_line(m) == "0 2097152 multipath 0 0 1 1 queue-length 0 2 1 8:16 1 8:32 1 "


# ------------------------------------------------------------ INFO and IMA
def test_info_fresh_and_after_io():
    m = construct(TABLE_A)
    assert m.status("info") == "2 1 0 0 2 1 E 0 2 2 8:16 A 0 0 1 8:32 A 0 0 1 E 0 2 2 8:48 A 0 0 1 8:64 A 0 0 1 "
    ios = []
    for _ in range(4):
        io = MpathIO(4096)
        assert m.map(io) == MAP_REMAPPED
        ios.append(io)
    # ST alternates 8:16, 8:32, 8:16, 8:32; complete the 8:32 ones, then fail 8:32
    for io in ios:
        if io.pgpath.dev.name == "8:32":
            m.end_io(io)
    m.message("fail_path", "8:32")
    io = MpathIO(4096)
    m.map(io)
    assert io.pgpath.dev.name == "8:16"
    assert m.status("info") == ("2 0 0 0 2 1 A 0 2 2 8:16 A 0 12288 1 8:32 F 1 0 1 "
                                "E 0 2 2 8:48 A 0 0 1 8:64 A 0 0 1 ")


def test_info_hst_bio_fresh():
    assert construct(TABLE_B).status("info") == "2 1 0 0 1 1 E 2 972 0 2 3 8:16 A 0 1024 0 0 8:32 A 0 1024 0 0 "


def test_ima_example_e():
    assert construct(TABLE_A).status("ima") == (
        "target_name=multipath,target_version=1.15.0,nr_priority_groups=2,pg_state_0=E,nr_pgpaths_0=2,"
        "path_selector_name_0=service-time,path_name_0_0=8:16,is_active_0_0=A,fail_count_0_0=0,"
        "path_selector_status_0_0=,path_name_0_1=8:32,is_active_0_1=A,fail_count_0_1=0,"
        "path_selector_status_0_1=,pg_state_1=E,nr_pgpaths_1=2,path_selector_name_1=service-time,"
        "path_name_1_0=8:48,is_active_1_0=A,fail_count_1_0=0,path_selector_status_1_0=,path_name_1_1=8:64,"
        "is_active_1_1=A,fail_count_1_1=0,path_selector_status_1_1=;")


def test_zero_pg_table():
    m = construct("0 0 0 0")
    assert m.status("info") == "2 1 0 0 0 0 "
    assert m.status("ima") == "target_name=multipath,target_version=1.15.0,nr_priority_groups=0;"
    assert m.map(MpathIO(512)) == MAP_KILL
    q = construct("1 queue_if_no_path 0 0 0")
    assert q.map(MpathIO(512)) == MAP_DELAY_REQUEUE


# ------------------------------------------------------------ constructor errors
@pytest.mark.parametrize("params,error", [
    ("", "invalid number of feature args"),
    ("9 a b c d e f g h i", "invalid number of feature args"),
    ("2 queue_if_no_path", "invalid number of feature args"),
    ("1 bogus 0 0 0", "Unrecognised multipath feature request"),
    ("1 pg_init_retries 0 0 0", "Unrecognised multipath feature request"),  # valued, no value counted
    ("2 pg_init_retries 0 0 0 0", "pg_init_retries must be between 1 and 50"),
    ("2 pg_init_retries 51 0 0 0", "pg_init_retries must be between 1 and 50"),
    ("2 pg_init_delay_msecs 60001 0 0 0", "pg_init_delay_msecs must be between 0 and 60000"),
    ("2 queue_mode xx 0 0 0", "Unknown 'queue_mode' requested"),
    ("0 2 alua", "invalid number of hardware handler args"),
    ("0 x", "invalid number of hardware handler args"),
    ("0 0", "invalid number of priority groups"),
    ("0 0 1025 1", "invalid number of priority groups"),
    ("0 0 1", "invalid initial priority group number"),
    ("0 0 1 0", "invalid initial priority group"),
    ("0 0 0 1", "invalid initial priority group"),
    ("0 0 1 1 round-robin", "not enough priority group arguments"),
    ("0 0 1 1 no-such 0 1 0 8:0", "unknown path selector type"),
    ("0 0 1 1 round-robin 5 1 0", "invalid number of path selector args"),
    ("0 0 1 1 historical-service-time 1 1024 1 0 8:0", "path selector constructor failed"),
    ("0 0 1 1 historical-service-time 3 1 2 3 1 0 8:0", "path selector constructor failed"),
    ("0 0 1 1 round-robin 0 0 0", "invalid number of paths"),
    ("0 0 1 1 round-robin 0 1", "invalid number of selector args"),
    ("0 0 1 1 round-robin 0 2 0 8:0", "not enough path parameters"),
    ("0 0 1 1 round-robin 0 1 1 8:0", "not enough path parameters"),
    ("0 0 1 1 round-robin 0 1 0 nosuchdev", "error getting device"),
    ("0 0 1 1 round-robin 0 1 1 8:0 x", "round-robin ps: invalid repeat count"),
    ("0 0 1 1 round-robin 0 1 2 8:0 1 1", "round-robin ps: incorrect number of arguments"),
    ("0 0 1 1 queue-length 0 1 1 8:0 x", "queue-length ps: invalid repeat count"),
    ("0 0 1 1 queue-length 0 1 2 8:0 1 1", "queue-length ps: incorrect number of arguments"),
    ("0 0 1 1 service-time 0 1 2 8:0 1 101", "service-time ps: invalid relative_throughput value"),
    ("0 0 1 1 service-time 0 1 3 8:0 1 1 1", "service-time ps: incorrect number of arguments"),
    ("0 0 1 1 service-time 0 1 1 8:0 q", "service-time ps: invalid repeat count"),
    ("0 0 1 1 historical-service-time 0 1 1 8:0 q", "historical-service-time ps: invalid repeat count"),
    ("0 0 1 1 historical-service-time 0 1 2 8:0 1 1", "historical-service-time ps: incorrect number of arguments"),
    ("0 0 1 1 io-affinity 0 1 0 8:0", "io-affinity ps: invalid number of arguments"),
    ("0 0 1 1 io-affinity 0 1 1 8:0 xyz", "io-affinity ps: invalid cpumask"),
    ("0 0 1 1 io-affinity 0 2 1 8:0 1 8:16 1", "io-affinity ps: No new/valid CPU mapping found"),
    ("0 0 2 1 round-robin 0 1 0 8:0", "priority group count mismatch"),
    ("0 0 1 1 round-robin 0 1 0 8:0 round-robin 0 1 0 8:16", "priority group count mismatch"),
])
def test_constructor_error_strings(params, error):
    with pytest.raises(TargetError) as ei:
        construct(params)
    assert ei.value.message == error


@pytest.mark.parametrize("line,error", [
    ("0 0 multipath 0 0 0 0", "zero-length target"),
    ("8 100 multipath 0 0 0 0", "Gap in table"),
    ("0 100 linear 8:0 0", "linear: unknown target type"),
])
def test_table_line_errors(line, error):
    with pytest.raises(TargetError) as ei:
        parse(line)
    assert ei.value.message == error


# ------------------------------------------------------------ messages
def test_messages_errors():
    m = construct(TABLE_A)
    with pytest.raises(MessageError) as ei:
        m.message("fail_path")
    assert ei.value.warning == "Invalid multipath message arguments. Expected 2 arguments, got 1."
    with pytest.raises(MessageError) as ei:
        m.message("frobnicate", "1")
    assert ei.value.warning == "Unrecognised multipath message received: frobnicate"
    for bad in ("0", "3", "x"):
        with pytest.raises(MessageError) as ei:
            m.message("switch_group", bad)
        assert ei.value.warning == "invalid PG number supplied to switch_pg_num"
        with pytest.raises(MessageError) as ei:
            m.message("disable_group", bad)
        assert ei.value.warning == "invalid PG number supplied to bypass_pg"
    with pytest.raises(MessageError) as ei:
        m.message("fail_path", "nosuch")
    assert ei.value.warning == "message: error getting device nosuch"
    with pytest.raises(MessageError) as ei:
        m.message("fail_path", "9:9")          # valid devt, no such path: -EINVAL
    assert ei.value.errno == 22
    m.suspend()
    with pytest.raises(MessageError) as ei:
        m.message("queue_if_no_path")
    assert ei.value.errno == 16


def test_disable_group_then_failover_to_pg2():
    m = construct(TABLE_A)
    m.map(MpathIO(4096))
    m.message("disable_group", "1")
    s = m.status("info")
    assert s.startswith("2 0 0 0 2 1 D ")
    m.map(MpathIO(4096))
    s = m.status("info")
    assert s.startswith("2 0 0 0 2 2 D ") and " A 0 2 2 8:48" in s
    m.message("enable_group", "1")            # resets current_pg: reselect from PG1
    io = MpathIO(4096)
    m.map(io)
    assert io.pgpath.pg.pg_num == 1


def test_switch_group_unbypasses_all_and_sets_next():
    m = construct(TABLE_A)
    m.message("disable_group", "2")
    m.message("switch_group", "2")
    assert m.status("table").split()[4] == "2"    # pg_num from next_pg
    io = MpathIO(4096)
    m.map(io)
    assert io.pgpath.pg.pg_num == 2
    assert " D " not in m.status("info")


def test_path_failure_moves_to_next_group_and_reinstate():
    m = construct(TABLE_A)
    for dev in ("8:16", "8:32"):
        m.message("fail_path", dev)
    io = MpathIO(4096)
    assert m.map(io) == MAP_REMAPPED and io.pgpath.pg.pg_num == 2
    m.message("reinstate_path", "8:16")
    # current PG stays PG2 while it has paths
    io = MpathIO(4096)
    m.map(io)
    assert io.pgpath.pg.pg_num == 2
    assert [u["DM_ACTION"] for u in m.uevents] == ["PATH_FAILED", "PATH_FAILED", "PATH_REINSTATED"]
    assert m.event_nr == 3
    # failing an already failed path is a no-op: fail_count stays 1
    m.message("fail_path", "8:32")
    assert " 8:32 F 1 " in m.status("info")


def test_rq_path_error_requeues_and_fails_path():
    m = construct("0 0 1 1 queue-length 0 2 0 8:16 8:32")
    io = MpathIO(4096)
    m.map(io)
    first = io.pgpath
    assert m.end_io(io, "ioerr") == END_REQUEUE
    assert not first.is_active
    # selector accounting stayed balanced
    assert first.pg.ps.in_flight(first) == 0
    # a non-path error completes with the error and fails nothing
    io2 = MpathIO(4096)
    m.map(io2)
    assert m.end_io(io2, "medium") == END_DONE and io2.error == "medium"
    assert io2.pgpath.is_active
    # last path fails without queue_if_no_path: the error is returned
    io3 = MpathIO(4096)
    m.map(io3)
    assert m.end_io(io3, "transport") == END_DONE and io3.error == "transport"
    assert m.map(MpathIO(4096)) == MAP_KILL


def test_bio_queue_if_no_path_queues_then_reinstate_kicks():
    kicks = []
    m = construct("3 queue_if_no_path queue_mode bio 0 1 1 round-robin 0 1 0 8:16",
                  on_kick=lambda mp: kicks.append(len(mp.queued_bios)))
    io = MpathIO(4096)
    assert m.map(io) == MAP_REMAPPED
    assert m.end_io(io, "ioerr") == END_INCOMPLETE        # queued inside the target
    assert len(m.queued_bios) == 1
    assert m.map(MpathIO(4096)) == MAP_SUBMITTED
    m.message("reinstate_path", "8:16")
    assert kicks and kicks[-1] == 2
    queued = m.take_queued()
    assert all(m.map(q) == MAP_REMAPPED for q in queued)
    # fail_if_no_path: queued I/O is errored on the next map
    m.message("fail_path", "8:16")
    m.message("fail_if_no_path")
    assert m.map(MpathIO(4096)) == MAP_KILL


def test_suspend_drops_queue_if_no_path_from_table_until_resume():
    m = construct("1 queue_if_no_path 0 1 1 round-robin 0 1 0 8:0")
    m.suspend(noflush=False)
    assert m.table().startswith("0 0 ")
    m.resume()
    assert m.table().startswith("1 queue_if_no_path 0 ")
    m.suspend(noflush=True)          # request-based noflush keeps it
    assert m.table().startswith("1 queue_if_no_path ")


def test_hw_handler_pg_init_sets_queue_io_until_activation_done():
    pending = []
    m = construct("0 1 alua 1 1 round-robin 0 2 0 8:16 8:32",
                  activate=lambda mp, p, delay: pending.append((p, delay)))
    assert m.map(MpathIO(512)) == MAP_DELAY_REQUEUE       # switch_pg: PG_INIT_REQUIRED
    assert len(pending) == 2 and m.pg_init_in_progress == 2
    assert m.status("info").startswith("2 1 1 ")           # QUEUE_IO, one pg_init round
    for p, _ in pending:
        m.pg_init_done(p, "ok")
    assert m.status("info").startswith("2 0 1 ")
    assert m.map(MpathIO(512)) == MAP_REMAPPED


def test_pg_init_retry_then_fail():
    pending = []
    m = construct("2 pg_init_retries 1 1 alua 1 1 round-robin 0 1 0 8:16",
                  activate=lambda mp, p, delay: pending.append((p, delay)))
    m.map(MpathIO(512))
    p, _ = pending.pop()
    m.pg_init_done(p, "retry")                 # count 1 <= retries 1: retry with delay
    p, delay = pending.pop()
    assert delay == 2000
    m.pg_init_done(p, "retry")                 # count 2 > 1: path fails
    assert not p.is_active
