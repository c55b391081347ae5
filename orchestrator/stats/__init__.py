"""Statistics over stored results, on plain numbers (no database here: orchestrator/store/query reads and feeds them).

regression_rule.py   the regression rule (large AND significant) on one series' points
series_verdicts.py   the rule applied to a series' point dicts: one judgement, or the verdict at every point
e2e_anchors.py       each end-to-end mode against its anchor (the fastest torch.compile mode of its kind)
e2e_setting.py       an end-to-end series' setting: model, shape, dtype and the length of a call
e2e_amdahl.py        what the kernels' micro wins should buy a model end to end, beside what they bought
explain.py           why a series changed: the two sides' captures (plain facts) compared, the change named
"""
