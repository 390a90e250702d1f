#!/usr/bin/env python3
"""Keeps the columns of a `calculon llm-all-executions` CSV(.gz) that
blueprint-search --all also writes: the execution's fields and the step
statistics (sample rate, the ten times, the memory per processor). The
kept cells are copied as text, unchanged; rows keep Calculon's order.

Usage: trim-all-executions.py IN.csv.gz OUT.csv.gz
"""
import csv
import gzip
import sys

KEEP_STATS = ['sample_rate', 'fw_time', 'bw_time', 'optim_step_time', 'recompute_time',
              'recomm_exposed_time', 'bubble_time', 'tp_comm_exposed_time',
              'pp_comm_exposed_time', 'dp_comm_exposed_time', 'total_time',
              'weight_space', 'act_space', 'act_checkpoint_size', 'act_grad_space',
              'weight_grad_space', 'optimizer_space', 'proc_mem_tier1_cap_req',
              'proc_mem_tier2_cap_req']


def main(source, target):
    with gzip.open(source, 'rt', newline='') as f:
        rows = list(csv.reader(f))
    header = rows[0]
    keep = [i for i, name in enumerate(header) if i <= header.index('training') or name in KEEP_STATS]
    with gzip.open(target, 'wt', newline='') as f:
        for row in rows:
            f.write(','.join(row[i] for i in keep) + '\n')


if __name__ == '__main__':
    main(*sys.argv[1:])
