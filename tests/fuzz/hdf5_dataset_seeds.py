# SPDX-License-Identifier: GPL-3.0-or-later
# Writes the hand-made seeds of the hdf5_dataset fuzz target (the byte format is described at the
# top of hdf5_dataset_fuzz.cpp): `python3 tests/fuzz/hdf5_dataset_seeds.py
# tests/fuzz/corpus/hdf5_dataset [tests/fuzz/regressions/hdf5_dataset]`. Each seed names what it
# makes: valid plain and VSL files, several files, bad ids, masks and positions, every kind of
# n_examples, types, ranks, links, cut-short and non-HDF5 files, option edge cases.
import os, sys, struct
out = sys.argv[1]
def hdr(flags=0, frac=0, vocab=63, B=2, steps=2, stride=1, seed=7, count=1):
    return bytes([flags, frac, vocab, (B-1) | ((steps-1) << 3) | ((stride-1) << 5), seed, count-1])
def h5(name=0, kind=0, typ=0, layout=0, dims=(4,3,8), link=0, ex=1, fill=0, content=0, seed=5, corrupt=()):
    b = bytes([kind | (name << 3), typ, layout]) + bytes(dims) + bytes([link, ex, fill, content | (len(corrupt) << 2), seed])
    for at, code in corrupt:
        b += struct.pack('<H', at) + bytes([code])
    return b
def other(kind, name, payload=b''):
    return bytes([kind | (name << 3)]) + payload
seeds = {
 'plain': hdr(steps=4) + h5(),
 'plain_shuffled_held_out': hdr(flags=2, frac=2, B=2, steps=4, stride=3) + h5(dims=(8,3,6)),
 'vsl_two_files': hdr(flags=1|2, frac=3, vocab=99, B=2, count=2) + h5(layout=8|16, dims=(3,5,6), seed=2) + h5(name=1, layout=8, dims=(4,5,6), seed=3),
 'vsl_off_five_rows': hdr(frac=0, B=1) + h5(dims=(2,5,4)),
 'three_files_all_eval': hdr(frac=4, B=3, count=3) + h5(dims=(2,3,5)) + h5(name=1, dims=(3,3,5), kind=1) + h5(name=2, dims=(1,3,5), kind=2),
 'bad_ids': hdr(B=1, steps=3) + h5(dims=(3,3,4), corrupt=((0, 5), (13, 0), (30, 8))),
 'bad_mask_and_labels': hdr(B=2) + h5(dims=(2,3,4), corrupt=((5, 3), (9, 9))),
 'bad_positions': hdr(flags=1, B=1, steps=2) + h5(dims=(2,5,4), corrupt=((18, 8), (37, 3))),
 'lengths_differ': hdr(count=2) + h5(dims=(2,3,4)) + h5(name=1, dims=(2,3,5)),
 'n_examples_kinds': hdr(count=4) + h5(dims=(2,3,4), ex=2) + h5(name=1, dims=(2,3,4), ex=3) + h5(name=2, dims=(2,3,4), ex=5) + h5(name=0, kind=3, dims=(2,3,4), ex=8),
 'n_examples_float_array': hdr(count=2) + h5(dims=(2,3,4), ex=6) + h5(name=1, dims=(2,3,4), ex=7),
 'types_float_string': hdr(count=2) + h5(typ=11, dims=(2,3,4)) + h5(name=1, typ=13, dims=(2,3,4)),
 'types_small_ints': hdr(count=3, vocab=200) + h5(typ=5, dims=(2,3,4)) + h5(name=1, typ=6, dims=(2,3,4)) + h5(name=2, typ=15, dims=(2,3,4)),
 'types_unsigned_raw': hdr(count=2, vocab=127) + h5(typ=9, dims=(2,3,4), content=2) + bytes([1,0,3,5,0,2,1,1,7,0,1,9,1,0,4,4,1,1,0,0,2,3,1,1]) + h5(name=1, typ=10, dims=(2,3,4)),
 'ranks': hdr(count=4) + h5(layout=3, dims=(20,)) + h5(name=1, layout=4, dims=(2,12)) + h5(name=2, layout=5, dims=(2,3,4,1)) + h5(name=0, kind=3, layout=6, dims=()),
 'empty_and_full': hdr(count=2, frac=2) + h5(dims=(0,3,4), layout=8) + h5(name=1, dims=(4,3,4)),
 'only_empty': hdr() + h5(dims=(0,3,4)),
 'other_files': hdr(count=4) + other(5, 4, bytes([6]) + b'hello!') + other(6, 4) + other(7, 1) + h5(name=3, dims=(2,3,4)),
 'not_hdf5_h5': hdr(count=2) + h5(dims=(2,3,4)) + other(5, 1, bytes([12]) + b'\x89PNG not h5!'),
 'cut_short': hdr(count=2) + h5(dims=(2,3,4)) + h5(name=1, kind=4, dims=(3,3,4), layout=8|16) + bytes([200]),
 'links': hdr(count=4) + h5(dims=(2,3,4)) + h5(name=1, dims=(2,3,4), link=5) + h5(name=2, dims=(2,3,4), link=6) + h5(name=0, kind=3, dims=(2,3,4), link=7),
 'external_link': hdr(count=2) + h5(dims=(2,3,4)) + h5(name=1, dims=(2,3,4), link=7),
 'misnamed': hdr(count=2) + h5(dims=(2,3,4), link=3) + h5(name=1, dims=(2,3,4), link=4),
 'files_named_dup_missing': hdr(flags=4|8, count=2) + h5(dims=(2,3,4)) + h5(name=1, dims=(3,3,4)),
 'missing_path': hdr(flags=16) + h5(dims=(2,3,4)),
 'msl_config': hdr(flags=32|64, count=1) + h5(dims=(2,3,4)),
 'msl_given': hdr(flags=32, count=1) + h5(dims=(2,3,6)),
 'fill_unwritten': hdr(count=1) + h5(dims=(3,3,4), layout=8, fill=1 | (1 << 3), content=3),
 'fill_bad': hdr(count=1) + h5(dims=(3,3,4), layout=8, fill=1 | (5 << 3), content=3),
 'vocab_zero': hdr(vocab=240) + h5(),
 'fraction_nan': hdr(frac=10) + h5(),
 'fraction_tiny': hdr(frac=7) + h5(dims=(3,3,4)),
 'batch_too_big': hdr(B=8) + h5(dims=(3,3,4)),
 'one_sample_vsl_shuffle': hdr(flags=3, B=1, steps=4, stride=8) + h5(dims=(1,5,8), seed=3),
}
for name, data in seeds.items():
    with open(os.path.join(out, name), 'wb') as f:
        f.write(data)
print(len(seeds), 'seeds')
if len(sys.argv) > 2:
    reg = sys.argv[2]
    regressions = {
        # "data" claiming 2^40 samples, none written: the reader believed the shape, read fill
        # values as samples and built a 2^40-entry shuffle order (8 TB).
        'rows_unwritten_shuffled': hdr(flags=2, B=2, steps=2) + h5(layout=8, dims=(240, 3, 4), content=3),
        # sequences of 2^30 + 1 tokens: each sample read at open allocated 24 GB.
        'msl_beyond_memory': hdr() + h5(layout=8, dims=(1, 3, 253), content=3),
        # sequences of 2^31 tokens: an int length of -2^31.
        'msl_beyond_int_2_31': hdr() + h5(dims=(1, 3, 238), content=3),
        # contiguous, never written: fill values read as samples.
        'contiguous_unwritten': hdr() + h5(dims=(3, 3, 4), fill=1 | (3 << 3), content=3),
    }
    for name, data in regressions.items():
        with open(os.path.join(reg, name), 'wb') as f:
            f.write(data)
    print(len(regressions), 'regressions')
