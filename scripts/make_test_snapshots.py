#!/usr/bin/env python3
"""Writes the allocator-snapshot test files in tests/core/data/snapshots/ with Python's pickle.

The files follow the schema torch documents for torch.cuda.memory._snapshot() (the TypedDicts
_Snapshot, _Segment, _Block, _TraceEntry and _Frame in torch/cuda/memory.py): a dict with
"segments" (each with "blocks") and "device_traces" (one list of trace entries per device); frames
innermost first. The allocations are a scripted sequence, not a real run: a toy caching allocator
gives each allocation its own segment rounded up to 2 MiB (blocks rounded up to 512 B, the rest of
the segment an inactive block) and keeps the segment after a free, as the caching allocator does.

  after_step.pickle   parameters and gradients in Megatron's contiguous buffers, two layers'
                      activations, Adam state after the first step, an all-gather buffer (freed
                      again, so it is in the trace's peak but not in the segments), an autograd
                      block without frames; pickle protocol 4 (_dump_snapshot's default on
                      Python 3.8 to 3.13).
  before_step.pickle  the same run snapshotted before the first optimizer step: no optimizer
                      state (the lazy-state confound); pickle protocol 2 (BINPUT, not MEMOIZE).

Run from the repository root: python3 scripts/make_test_snapshots.py
The expected numbers in tests/core/test_snapshot.cpp are derived from the sizes below.
"""
import collections
import os
import pickle

MEGATRON = "/workspace/megatron-lm/megatron/core/"
TORCH = "/usr/lib/python3/dist-packages/torch/"
TRAIN = "/workspace/megatron-lm/pretrain_gpt.py"

KIB = 1024
MIB = 1024 * KIB


def frame(filename, line, name):
    return {"filename": filename, "line": line, "name": name}


PARAM_BUFFER = [frame(MEGATRON + "distributed/param_and_grad_buffer.py", 612, "__init__"),
                frame(MEGATRON + "distributed/distributed_data_parallel.py", 241, "__init__"),
                frame(TRAIN, 120, "model_provider")]
ADAM_STATE = [frame(TORCH + "optim/adam.py", 160, "_init_group"),
              frame(TORCH + "optim/adam.py", 223, "step"),
              frame(MEGATRON + "optimizer/optimizer.py", 480, "step"),
              frame(TRAIN, 300, "train_step")]
MASTER = [frame(MEGATRON + "optimizer/distrib_optimizer.py", 360,
                "_build_model_and_main_param_groups"),
          frame(MEGATRON + "optimizer/distrib_optimizer.py", 520, "__init__"),
          frame(TRAIN, 140, "setup_model_and_optimizer")]
ALL_GATHER = [frame(TORCH + "distributed/distributed_c10d.py", 3500, "all_gather_into_tensor"),
              frame(MEGATRON + "optimizer/muon.py", 210, "step"),
              frame(TRAIN, 300, "train_step")]


def layer_frames(module_file, line, layer):
    return [frame(MEGATRON + "transformer/" + module_file, line, "forward"),
            frame(MEGATRON + "transformer/transformer_layer.py", 400 + layer, "forward"),
            frame(MEGATRON + "transformer/transformer_block.py", 550, "forward"),
            frame(TRAIN, 200, "forward_step")]


def round_up(value, unit):
    return (value + unit - 1) // unit * unit


class ToyAllocator:
    """One segment per allocation; frees keep the segment (cached)."""

    def __init__(self):
        self.next_address = 0x7F0000000000
        self.segments = []
        self.trace = []
        self.time_us = 1000

    def _event(self, action, addr, size, frames):
        self.time_us += 10
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                           "time_us": self.time_us, "frames": frames})

    def alloc(self, requested, frames):
        block = round_up(requested, 512)
        total = round_up(block, 2 * MIB)
        address = self.next_address
        self.next_address += total
        self._event("segment_alloc", address, total, frames)
        self._event("alloc", address, block, frames)
        blocks = [{"address": address, "size": block, "requested_size": requested,
                   "state": "active_allocated", "frames": frames}]
        if total > block:
            blocks.append({"address": address + block, "size": total - block,
                           "requested_size": 0, "state": "inactive", "frames": []})
        self.segments.append({"device": 0, "address": address, "total_size": total,
                              "allocated_size": block, "active_size": block,
                              "requested_size": requested, "stream": 0,
                              "segment_type": "large" if total > MIB else "small",
                              "segment_pool_id": (0, 0), "is_expandable": False,
                              "frames": frames, "blocks": blocks})
        return address

    def free(self, address):
        for segment in self.segments:
            if segment["address"] == address:
                active = segment["blocks"][0]
                self._event("free_requested", address, active["size"], active["frames"])
                self._event("free_completed", address, active["size"], active["frames"])
                active["state"] = "inactive"
                active["requested_size"] = 0
                segment["allocated_size"] = 0
                segment["active_size"] = 0
                return
        raise KeyError(address)

    def snapshot(self):
        return {"segments": self.segments, "device_traces": [self.trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": ""}}


def run(with_step):
    a = ToyAllocator()
    # bf16 parameters (512 Ki elements) and fp32 main gradients, Megatron's contiguous buffers.
    a.alloc(1 * MIB, PARAM_BUFFER)
    a.alloc(2 * MIB, PARAM_BUFFER)
    if with_step:
        a.alloc(2 * MIB, MASTER)  # fp32 master weights, distributed optimizer
    # Two transformer layers' stored activations (attention, MLP), forward of one micro-batch.
    for layer in range(2):
        a.alloc(256 * KIB, layer_frames("attention.py", 700, layer))
        a.alloc(512 * KIB, layer_frames("mlp.py", 160, layer))
    # An autograd-thread allocation: no Python frames.
    a.alloc(1000, [])
    if with_step:
        a.alloc(2 * MIB, ADAM_STATE)  # exp_avg
        a.alloc(2 * MIB, ADAM_STATE)  # exp_avg_sq
        gathered = a.alloc(4 * MIB, ALL_GATHER)
        a.free(gathered)
    return a.snapshot()


def escape(data):
    """The corpus escapes of tests/corpus.h: printable ASCII as is, everything else \\xNN."""
    out = []
    for byte in data:
        c = chr(byte)
        if c == "\\":
            out.append("\\\\")
        elif 0x20 < byte < 0x7F and c != "#":
            out.append(c)
        else:
            out.append("\\x%02x" % byte)
    return "".join(out)


def good_block():
    return {"address": 0, "size": 512, "requested_size": 500, "state": "active_allocated",
            "frames": [frame("a.py", 1, "forward")]}


def good_segment(**changes):
    segment = {"address": 0, "total_size": 2 * MIB, "allocated_size": 512, "active_size": 512,
               "stream": 0, "segment_type": "small", "blocks": [good_block()]}
    segment.update(changes)
    return segment


def bad_snapshots():
    """Pickles that decode but break the snapshot schema: (expected error text, value)."""
    block_no_size = good_block()
    del block_no_size["size"]
    frame_bad_line = good_block()
    frame_bad_line["frames"] = [{"filename": "a.py", "line": "1", "name": "f"}]
    negative = good_block()
    negative["requested_size"] = -1
    return [
        ("snapshot: expected a dict", [1, 2]),
        ("segments: missing", {"device_traces": []}),
        ("segments: expected a list", {"segments": {}}),
        ("segments[0]: expected a dict", {"segments": [3]}),
        ("segments[0].total_size: missing", {"segments": [{"address": 0}]}),
        ("segments[0].blocks[0].size: missing",
         {"segments": [good_segment(blocks=[block_no_size])]}),
        ("segments[0].blocks[0].frames[0].line: expected an int",
         {"segments": [good_segment(blocks=[frame_bad_line])]}),
        ("segments[0].blocks[0].requested_size: -1 is negative",
         {"segments": [good_segment(blocks=[negative])]}),
        ("segments[0].segment_type: expected a str",
         {"segments": [good_segment(segment_type=None)]}),
        ("device_traces[0]: expected a list", {"segments": [], "device_traces": [5]}),
        ("device_traces[0][0].action: missing",
         {"segments": [], "device_traces": [[{"size": 1, "stream": 0}]]}),
        ("device_traces[0][1].size: expected an int",
         {"segments": [], "device_traces": [[{"action": "alloc", "addr": 0, "size": 1,
                                              "stream": 0},
                                             {"action": "alloc", "addr": 0, "size": 1.5,
                                              "stream": 0}]]}),
    ]


def write_bad_corpus():
    path = os.path.join("tests", "bad-inputs", "snapshot.txt")
    with open(path, "w") as f:
        f.write("# Bad allocator snapshots: each line is EXPECTED<TAB>PICKLE. The pickle (written by\n"
                "# scripts/make_test_snapshots.py with Python's pickle, protocol 4) must be rejected\n"
                "# by read_snapshot() with an error containing EXPECTED (the field path). Escapes as\n"
                "# in tests/corpus.h. The pickle-level corpus is tests/bad-inputs/pickle.txt.\n")
        for expected, value in bad_snapshots():
            f.write(expected + "\t" + escape(pickle.dumps(value, protocol=4)) + "\n")
    print(path)


def main():
    out = os.path.join("tests", "core", "data", "snapshots")
    os.makedirs(out, exist_ok=True)
    for name, with_step, protocol in (("after_step.pickle", True, 4),
                                      ("before_step.pickle", False, 2)):
        path = os.path.join(out, name)
        with open(path, "wb") as f:
            pickle.dump(run(with_step), f, protocol=protocol)
        print(path, os.path.getsize(path), "bytes")
    # A pickle of a class instance: protocol 2 names the class with GLOBAL, which the reader
    # refuses (it never imports or calls anything).
    path = os.path.join(out, "refused_global.pickle")
    with open(path, "wb") as f:
        pickle.dump(collections.OrderedDict(segments=[]), f, protocol=2)
    print(path, os.path.getsize(path), "bytes")
    write_bad_corpus()


if __name__ == "__main__":
    main()
