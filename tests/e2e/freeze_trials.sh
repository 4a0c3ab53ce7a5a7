#!/usr/bin/env bash
# 3 trials: a random rank of 4 SIGSTOPped at a random time during training,
# no flags; every process ends within 15 s (the launcher ends the stopped
# one), every survivor names the stopped rank.
exec bash "$(dirname "$0")/liveness_trials.sh" 0 3
