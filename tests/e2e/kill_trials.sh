#!/usr/bin/env bash
# 5 trials: a random rank of 4 SIGKILLed at a random time during training;
# every process gone within 10 s, every survivor names the lost rank.
exec bash "$(dirname "$0")/liveness_trials.sh" 5 0
