"""dm-ima measurement of a multipath table (classic dm-ima).

The vectors below were computed independently from the same rules as the
worked example in shared/notes/kernel-spec.md section 5.5, and agree with it;
neither was captured from a running kernel."""
from mpathlab.target import construct, parse
from mpathlab.target import ima

TABLE_A = ("0 2097152 multipath 1 queue_if_no_path 0 2 1 service-time 0 2 2 8:16 1 1 8:32 1 1 "
           "service-time 0 2 2 8:48 1 1 8:64 1 1")


def test_table_load_and_resume_vectors():
    m = parse(TABLE_A)
    buf = ima.table_load_buffer(m, "mpatha", "mpath-360014051234", 253, 0)
    assert len(buf) == 650
    assert buf.startswith("dm_version=4.50.0;name=mpatha,uuid=mpath-360014051234,major=253,minor=0,"
                          "minor_count=1,num_targets=1;target_index=0,target_begin=0,target_len=2097152,"
                          "target_name=multipath,target_version=1.15.0,nr_priority_groups=2,")
    rec = ima.measurement("dm_table_load", buf)
    assert rec["digest"] == "sha256:b778bb9caacfa479346c1570b3acbc4a5f3e33d1662cf7d11c2aec2c3e1c7625"
    assert rec["template_hash"] == "6b7a2ebf33ebff957c48936eaae2f961f8f7e0f6"
    assert rec["ascii"].startswith("10 6b7a2ebf33ebff957c48936eaae2f961f8f7e0f6 ima-buf sha256:b778bb9c")
    assert rec["ascii"].endswith(" dm_table_load " + buf.encode().hex())
    h = ima.table_hash([buf])
    res = ima.device_resume_buffer("mpatha", "mpath-360014051234", 253, 0, h, 2097152)
    rec2 = ima.measurement("dm_device_resume", res)
    assert rec2["digest"] == "sha256:cc6840654ecb24d6da80ea254dd5641c68afddfe21af9ab2722dcaafc384f707"
    assert rec2["template_hash"] == "4e633f72cc040b9bde383848d54995c32ce33173"


def test_name_and_uuid_escaping_only():
    assert ima.escape("a,b;c=d\\e") == "a\\,b\\;c\\=d\\\\e"
    assert ima.device_metadata("linear=2", "", 253, 1).startswith("name=linear\\=2,uuid=,major=253")


def test_ima_string_cut_at_the_2048_byte_target_buffer():
    paths = " ".join("8:%d" % (16 * i) for i in range(40))
    m = construct("0 0 1 1 round-robin 0 40 0 " + paths)
    full = m.status("ima")
    assert len(full) > 2047 and full.endswith(";")
    cut = m.status("ima", maxlen=2048)
    assert cut == full[:2047] and not cut.endswith(";")
    assert m.status("table", maxlen=5) == m.status("table")[:4]
