"""The statements that join embedded PostgreSQL servers into one Citus cluster
(docs/scaling.md#locally-a-coordinator-and-n-workers).

app/embedded.py runs them as the superuser through the bundled `psql`, before any pool
exists; values come in as psql variables (`:'host'`, `:port`), never formatted in.
Each is idempotent: every start of the stack runs them again.
"""

from __future__ import annotations

# On every node, workers first: the extensions the schema needs, only where missing (a
# worker already in the cluster refuses even CREATE EXTENSION IF NOT EXISTS). psql runs
# each row's statement (\gexec), citus first.
NODE_EXTENSIONS = """SELECT format('CREATE EXTENSION %I', e)
FROM unnest(ARRAY['citus', 'vector']) WITH ORDINALITY AS x(e, i)
WHERE NOT EXISTS (SELECT 1 FROM pg_extension WHERE extname = e) ORDER BY i \\gexec
"""

# On the coordinator: where the workers (and the rebalancer) reach it.
SET_COORDINATOR = "SELECT citus_set_coordinator_host(:'host', :port);\n"

# On the coordinator, once per worker: add it unless it is in the cluster already.
ADD_WORKER = """SELECT citus_add_node(:'host', :port)
WHERE NOT EXISTS (SELECT 1 FROM pg_dist_node WHERE nodename = :'host' AND nodeport = :port);
"""
