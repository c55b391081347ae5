"""What marks a node of the fleet in Ray: the namespace of its labels and the custom resource every node carries."""

LABEL_NS = "kernelfleet.io"  # kernelfleet.io/gpu=h200, kernelfleet.io/arch=sm_90, kernelfleet.io/vendor=nvidia ...
# Every node carries one unit of this custom resource (set by `node join`, `cluster up --with-gpus` and the embedded
# local start).  A job that takes a whole node (end to end, profile) asks for all of it; every other job asks for a
# sliver, so it cannot run beside a whole-node job and a whole-node job waits until its node is idle.
NODE_RESOURCE = "kernelfleet_node"
