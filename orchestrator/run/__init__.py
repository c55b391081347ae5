"""Running a sweep: the run in the store, the jobs scheduled as Ray tasks, the results written back.

==================  ==================================================================================================
module              holds
==================  ==================================================================================================
``sweep``           one sweep end to end: plan, open the run, skip what is done, schedule, summarise
``schedule``        Ray scheduling: batches of JobSpecs as Ray tasks on nodes of the job's GPU type
``conditions``      what a sweep is made under (uncommitted changes, GPUs shared by nodes, a rehearsal node)
==================  ==================================================================================================
"""
