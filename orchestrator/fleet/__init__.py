"""The fleet: GPU nodes that join the Ray cluster, their labels, and the cluster they form.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``labels``          the namespace of the nodes' labels and the resource every node carries
``nodes``           what a GPU node needs to join the cluster, its labels, the ``ray start`` it runs, the node list
==================  ==================================================================================================
"""
