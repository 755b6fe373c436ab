#!/usr/bin/env python3
"""Builds the seed corpora of the fuzz targets (docs/fuzzing.md) from the shared test corpus and
fuzz/seeds/: OUT/<target>/ for each target. Run by scripts/fuzz.sh.

  make_seeds.py CORPUS_DIR OUT_DIR

GraphDefs come from tf/graphdef/*.pb and from the MetaGraphDefs inside tf/saved_model/*/
saved_model.pb; TensorProtos are the `value` attributes of their Const nodes; checkpoint indexes
from tf/checkpoint and the SavedModels' variables; ONNX models are a spread of onnx-node/*/
model.onnx; RPC requests are frames (method byte + wire.c framing) built around those GraphDefs.
A missing corpus leaves only the committed seeds (fuzz/seeds/)."""
import glob
import hashlib
import os
import shutil
import struct
import sys

MAX_SEED = 1 << 20  # larger inputs make each run slow without adding coverage


def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def fields(buf):
    """Yields (field number, wire type, value) of a protobuf message; stops at malformed data."""
    i = 0
    while i < len(buf):
        key, i = read_varint(buf, i)
        if key is None:
            return
        num, wt = key >> 3, key & 7
        if wt == 0:
            v, i = read_varint(buf, i)
            if v is None:
                return
        elif wt == 1:
            v, i = buf[i:i + 8], i + 8
        elif wt == 2:
            n, i = read_varint(buf, i)
            if n is None or i + n > len(buf):
                return
            v, i = buf[i:i + n], i + n
        elif wt == 5:
            v, i = buf[i:i + 4], i + 4
        else:
            return
        yield num, wt, v


def read_varint(buf, i):
    shift = v = 0
    while i < len(buf):
        b = buf[i]
        i += 1
        v |= (b & 0x7F) << shift
        if not b & 0x80:
            return v, i
        shift += 7
    return None, i


def ld(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def const_tensors(graphdef):
    for num, wt, node in fields(graphdef):
        if num != 1 or wt != 2:
            continue
        for n2, w2, entry in fields(node):
            if n2 != 5 or w2 != 2:
                continue
            for n3, w3, value in fields(entry):
                if n3 == 2 and w3 == 2:
                    for n4, w4, tensor in fields(value):
                        if n4 == 8 and w4 == 2:
                            yield tensor


def saved_model_graphdefs(data):
    for num, wt, meta in fields(data):
        if num == 2 and wt == 2:
            for n2, w2, gd in fields(meta):
                if n2 == 2 and w2 == 2:
                    yield gd


def put(out_dir, target, data):
    if len(data) > MAX_SEED:
        return
    d = os.path.join(out_dir, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, hashlib.sha1(data).hexdigest()), "wb") as f:
        f.write(data)


def block_entries(buf):
    """Key/value pairs of one LevelDB block (prefix-compressed keys, restart array at the end)."""
    if len(buf) < 4:
        return
    n_restarts = struct.unpack("<I", buf[-4:])[0]
    end = len(buf) - 4 - 4 * n_restarts
    i, key = 0, b""
    while 0 <= i < end:
        shared, i = read_varint(buf, i)
        unshared, i = read_varint(buf, i)
        vlen, i = read_varint(buf, i)
        if shared is None or unshared is None or vlen is None:
            return
        key = key[:shared] + buf[i:i + unshared]
        i += unshared
        yield key, buf[i:i + vlen]
        i += vlen


def table_entries(data):
    """Every entry of an uncompressed table (what TensorFlow writes for bundle indexes)."""
    if len(data) < 48:
        return []
    footer = data[-48:]
    _, i = read_varint(footer, 0)
    _, i = read_varint(footer, i)
    off, i = read_varint(footer, i)
    size, i = read_varint(footer, i)
    out = []
    for _, handle in block_entries(data[off:off + size]):
        boff, j = read_varint(handle, 0)
        bsize, j = read_varint(handle, j)
        if boff is None or bsize is None or data[boff + bsize:boff + bsize + 1] != b"\0":
            continue  # compressed blocks are left to the raw seeds
        out.extend(block_entries(data[boff:boff + bsize]))
    return out


def records(entries):
    """The checkpoint target's structured form: [u8 key len][key][u16 LE value len][value]."""
    out = b""
    for k, v in entries:
        if len(k) < 256 and len(v) < 65536:
            out += bytes([len(k)]) + k + struct.pack("<H", len(v)) + v
    return out


def frame(method, msg, tensors=b"", tensor_list=b""):
    return bytes([method]) + varint(len(msg)) + msg + varint(len(tensor_list)) + tensor_list + tensors


def main():
    corpus, out = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    shutil.rmtree(out, ignore_errors=True)
    for target in ("graphdef", "tensor_proto", "checkpoint", "cluster_spec", "slurm", "rpc_request", "onnx",
                   "npy"):
        os.makedirs(os.path.join(out, target), exist_ok=True)
        for p in glob.glob(os.path.join(here, "seeds", target, "*")):
            with open(p, "rb") as f:
                put(out, target, f.read())

    graphdefs = []
    for p in sorted(glob.glob(os.path.join(corpus, "tf", "graphdef", "*.pb"))):
        with open(p, "rb") as f:
            graphdefs.append(f.read())
    for p in sorted(glob.glob(os.path.join(corpus, "tf", "saved_model", "*", "saved_model.pb"))):
        with open(p, "rb") as f:
            graphdefs.extend(saved_model_graphdefs(f.read()))
    for gd in graphdefs:
        put(out, "graphdef", gd)
        for t in const_tensors(gd):
            put(out, "tensor_proto", t)
        if len(gd) < MAX_SEED:
            put(out, "rpc_request", frame(0, ld(1, gd)))                      # CreateSession
            put(out, "rpc_request", frame(1, ld(1, b"s1") + ld(2, gd)))       # ExtendSession
            put(out, "rpc_request", frame(7, ld(1, b"sess") + ld(2, gd)))     # RegisterGraph

    # Requests without a graph: every method with an empty message, and steps with a tensor.
    for method in range(14):
        put(out, "rpc_request", frame(method, b""))
    floats = struct.pack("<4f", 1.0, 2.0, 3.0, 4.0)
    meta = varint(2 << 3) + varint(1) + ld(3, varint(2) + varint(2)) + varint(4 << 3) + varint(16)
    run_step = ld(1, b"sess") + ld(2, b"x:0") + ld(3, b"y:0")
    put(out, "rpc_request", frame(2, run_step, floats, ld(1, meta)))
    strings = b"abcde"
    smeta = (varint(2 << 3) + varint(7) + ld(3, varint(2)) + varint(4 << 3) + varint(5) +
             ld(5, varint(2) + varint(3)))
    put(out, "rpc_request", frame(9, ld(1, b"g") + varint(2 << 3) + varint(1), strings, ld(1, smeta)))
    put(out, "rpc_request", frame(10, varint(1 << 3) + varint(7) + ld(2, b"/job:ps;edge_1;0:0")))

    indexes = glob.glob(os.path.join(corpus, "tf", "checkpoint", "**", "*.index"), recursive=True)
    indexes += glob.glob(os.path.join(corpus, "tf", "saved_model", "*", "variables", "*.index"))
    for p in sorted(indexes):
        with open(p, "rb") as f:
            data = f.read()
        put(out, "checkpoint", b"\0" + data)  # mode 0: the index file as is
        entries = table_entries(data)
        if entries:
            put(out, "checkpoint", b"\1" + records(entries))  # mode 1: entries, rebuilt


    models = sorted(glob.glob(os.path.join(corpus, "onnx-node", "*", "model.onnx")))
    step = max(1, len(models) // 40)
    for p in models[::step]:
        with open(p, "rb") as f:
            put(out, "onnx", f.read())

    for target in sorted(os.listdir(out)):
        print(f"{target}: {len(os.listdir(os.path.join(out, target)))} seeds")


if __name__ == "__main__":
    main()
