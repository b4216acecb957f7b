#!/usr/bin/env python3
"""Records a real PyTorch CUDA allocator snapshot for `stagemem snapshot` (needs PyTorch and a GPU;
not run in CI).

A small transformer (torch.nn.TransformerEncoder) trains for --steps steps with Adam while the
allocator records its history (torch.cuda.memory._record_memory_history); the snapshot is written
with torch.cuda.memory._dump_snapshot, the file memory_viz reads. --before-step snapshots after the
first backward but before the first optimizer step, to show the lazy-state confound (Adam's
exp_avg / exp_avg_sq do not exist yet).

  python3 scripts/record_snapshot.py --out snapshot.pickle
  stagemem snapshot snapshot.pickle

Under Megatron-LM, the same two calls around a training step record a snapshot whose frames name
param_and_grad_buffer.py, the optimizer and the transformer layers:
  torch.cuda.memory._record_memory_history(max_entries=100000)   # before building the model
  torch.cuda.memory._dump_snapshot("rank0.pickle")               # after the step of interest
"""
import argparse
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="snapshot.pickle")
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--hidden", type=int, default=1024)
    parser.add_argument("--heads", type=int, default=8)
    parser.add_argument("--seq", type=int, default=512)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--steps", type=int, default=1)
    parser.add_argument("--before-step", action="store_true",
                        help="snapshot before the first optimizer step (no optimizer state yet)")
    parser.add_argument("--max-entries", type=int, default=100000)
    args = parser.parse_args()

    try:
        import torch
    except ImportError:
        sys.exit("record_snapshot.py: PyTorch is not installed")
    if not torch.cuda.is_available():
        sys.exit("record_snapshot.py: no CUDA device")

    torch.cuda.memory._record_memory_history(max_entries=args.max_entries)
    device = torch.device("cuda")
    layer = torch.nn.TransformerEncoderLayer(args.hidden, args.heads, 4 * args.hidden,
                                             batch_first=True)
    model = torch.nn.TransformerEncoder(layer, args.layers).to(device)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(args.batch, args.seq, args.hidden, device=device)
    for step in range(args.steps):
        loss = model(x).float().pow(2).mean()
        loss.backward()
        if args.before_step and step == 0:
            break
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)
    torch.cuda.synchronize()
    torch.cuda.memory._dump_snapshot(args.out)
    torch.cuda.memory._record_memory_history(enabled=None)
    print(f"{args.out}: torch {torch.__version__}, "
          f"{torch.cuda.memory_allocated()} B allocated, {torch.cuda.memory_reserved()} B reserved")


if __name__ == "__main__":
    main()
