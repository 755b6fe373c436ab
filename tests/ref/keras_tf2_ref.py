#!/usr/bin/python3
# The reference outputs of tests/test_saved_model.c's /saved_model/keras_tf2, computed without
# Weft: the cppflow_keras SavedModel is Dense(5, relu) -> Dense(1, sigmoid), and this script reads
# its weights from the tensor bundle's bytes itself (the SSTable index, uncompressed blocks, and
# BundleEntryProto offsets into the data file) and evaluates the model in double precision.
# Usage: python3 tests/ref/keras_tf2_ref.py [CORPUS]  (CORPUS defaults to ../shared/corpus)
import math
import struct
import sys

def varint(b, i):
    r = s = 0
    while True:
        c = b[i]; i += 1; r |= (c & 0x7f) << s; s += 7
        if c < 0x80: return r, i
def block(b, off, size):
    assert b[off + size] == 0, "compressed block"
    d = b[off:off + size]
    nrest = struct.unpack('<I', d[-4:])[0]
    end = len(d) - 4 - 4 * nrest
    i, key, out = 0, b'', []
    while i < end:
        sh, i = varint(d, i); ns, i = varint(d, i); vl, i = varint(d, i)
        key = key[:sh] + d[i:i + ns]; i += ns
        out.append((key, d[i:i + vl])); i += vl
    return out
def fields(m):
    i, f = 0, {}
    while i < len(m):
        t, i = varint(m, i); n, w = t >> 3, t & 7
        if w == 0: v, i = varint(m, i)
        elif w == 2: l, i = varint(m, i); v = m[i:i + l]; i += l
        elif w == 5: v = m[i:i + 4]; i += 4
        elif w == 1: v = m[i:i + 8]; i += 8
        f.setdefault(n, []).append(v)
    return f
def read_bundle(prefix):
    b = open(prefix + '.index', 'rb').read()
    foot = b[-48:]
    _, i = varint(foot, 0); _, i = varint(foot, i)
    io, i = varint(foot, i); isz, i = varint(foot, i)
    data = open(prefix + '.data-00000-of-00001', 'rb').read()
    out = {}
    for _, h in block(b, io, isz):
        o, j = varint(h, 0); sz, j = varint(h, j)
        for k, v in block(b, o, sz):
            if k == b'': continue
            f = fields(v)
            if f.get(1, [0])[0] != 1: continue  # float32 only
            shape = [fields(d).get(1, [0])[0] for d in fields(f[2][0]).get(2, [])] if 2 in f else []
            off = f.get(4, [0])[0]; size = f.get(5, [0])[0]
            out[k.decode()] = (shape, list(struct.unpack('<%df' % (size // 4), data[off:off + size])))
    return out

# sigmoid(relu(x K0 + b0) K1 + b1)
corpus = sys.argv[1] if len(sys.argv) > 1 else '../shared/corpus'
w = read_bundle(corpus + '/tf/saved_model/cppflow_keras/variables/variables')
K0 = w['layer_with_weights-0/kernel/.ATTRIBUTES/VARIABLE_VALUE'][1]
b0 = w['layer_with_weights-0/bias/.ATTRIBUTES/VARIABLE_VALUE'][1]
K1 = w['layer_with_weights-1/kernel/.ATTRIBUTES/VARIABLE_VALUE'][1]
b1 = w['layer_with_weights-1/bias/.ATTRIBUTES/VARIABLE_VALUE'][1]
for x in ([1, 2, 3, 4, 5], [0, 0, 0, 0, 0], [-1, 0.5, 2, -3, 1]):
    h = [max(0.0, sum(x[i] * K0[i * 5 + j] for i in range(5)) + b0[j]) for j in range(5)]
    z = sum(h[j] * K1[j] for j in range(5)) + b1[0]
    print(x, repr(1 / (1 + math.exp(-z))))
