"""The Cypher statements of the Neo4j store, kept to the subset Neo4j 5 and ArcadeDB share.

Each data statement is one round-trip: it reads what it needs and writes in the same query, with
an aggregation (``WITH collect(...)`` or ``count(*)`` without grouping keys) as the barrier between
the read and the write phases, so every write sees the state from before the call. Conditional
writes use ``FOREACH (_ IN CASE WHEN cond THEN [1] ELSE [] END | ...)`` rather than ``CALL {}``
subqueries, whose syntax changed during Neo4j 5. No APOC, no vector procedures. ``graph/CYPHER.md``
lists the features relied on.

Graph shape::

    (:File {path, mtime_ns, size, sha256})
    (:Block {id, anchor, file, text, hash, version, position, updated_at, deleted_at})
        id: the key ``anchor@file`` (graph.base.block_key); anchor: the id the note gives it
    (:Claim {id, text})-[:ORIGINATES_FROM {ordinal, entailed_score, coverage_score,
        decontextualization_score, quality, verdict, justification, status, model,
        evaluated_hash, evaluated_at}]->(:Block)
    (:Claim)-[:OMITS {position}]->(:Element {claim_id, text})
    (:AclaraiMigration {name, applied_at})
"""

from __future__ import annotations

from aclarai.parsers import SCORE_NAMES

_ANY_NULL = " OR ".join(f"e.{name} IS NULL" for name in SCORE_NAMES)
"""Whether an edge lacks one of its scores (a failed evaluation)."""

SCHEMA: tuple[str, ...] = (
    "CREATE CONSTRAINT aclarai_block_id IF NOT EXISTS FOR (b:Block) REQUIRE b.id IS UNIQUE",
    "CREATE CONSTRAINT aclarai_claim_id IF NOT EXISTS FOR (c:Claim) REQUIRE c.id IS UNIQUE",
    "CREATE CONSTRAINT aclarai_file_path IF NOT EXISTS FOR (f:File) REQUIRE f.path IS UNIQUE",
    "CREATE INDEX aclarai_block_hash IF NOT EXISTS FOR (b:Block) ON (b.hash)",
    "CREATE INDEX aclarai_block_file IF NOT EXISTS FOR (b:Block) ON (b.file)",
    "CREATE INDEX aclarai_block_anchor IF NOT EXISTS FOR (b:Block) ON (b.anchor)",
    "CREATE INDEX aclarai_element_claim IF NOT EXISTS FOR (e:Element) ON (e.claim_id)",
)

# Data migrations, in order: each is named, recorded as an ``AclaraiMigration`` node once done,
# and made of idempotent statements, so one cut short is simply run again on the next start.
APPLIED_MIGRATIONS = "MATCH (m:AclaraiMigration) RETURN m.name AS name"
RECORD_MIGRATION = "MERGE (m:AclaraiMigration {name: $name}) SET m.applied_at = $now"


def _stamps_to_utc_z(pattern: str, prop: str) -> str:
    """Rewrite ``+00:00`` and fractional stamps of ``prop`` into ``2024-06-03T09:00:00Z``."""
    return (
        f"MATCH {pattern} WHERE {prop} ENDS WITH '+00:00' "
        f"OR ({prop} ENDS WITH 'Z' AND size({prop}) > 20) "
        f"SET {prop} = substring({prop}, 0, 19) + 'Z'"
    )


MIGRATIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "m001_utc_stamps",
        (
            _stamps_to_utc_z("(b:Block)", "b.updated_at"),
            _stamps_to_utc_z("(b:Block)", "b.deleted_at"),
            _stamps_to_utc_z("(:Claim)-[e:ORIGINATES_FROM]->(:Block)", "e.evaluated_at"),
        ),
    ),
    (
        # A block is its note plus its id: ids were unique vault-wide, so each key is new.
        "m002_note_scoped_block_keys",
        (
            "MATCH (b:Block) WHERE b.anchor IS NULL "
            "SET b.anchor = b.id, b.id = b.id + '@' + coalesce(b.file, '')",
        ),
    ),
)

BLOCK_FIELDS = (
    "b.id AS id, b.file AS file, b.text AS text, b.hash AS hash, b.version AS version, "
    "b.position AS position, b.updated_at AS updated_at, b.deleted_at AS deleted_at"
)

FILE_STATES = (
    "MATCH (f:File) RETURN f.path AS path, f.mtime_ns AS mtime_ns, f.size AS size, "
    "f.sha256 AS sha256"
)

FILE_STATES_OF = (
    "UNWIND $paths AS p MATCH (f:File {path: p}) RETURN f.path AS path, f.mtime_ns AS mtime_ns, "
    "f.size AS size, f.sha256 AS sha256"
)

# Live blocks each synced file held before the call and no longer lists (the caller drops those
# another file of the call lists: moved, not removed). ``UNWIND ... {file: f.path}`` rather than
# ``WHERE h.file IN $paths``: ArcadeDB plans the rest of the statement several times slower after
# the latter; and short per-file id lists keep the ``IN`` test cheap.
_SYNC_REMOVED = """
UNWIND $files AS f
OPTIONAL MATCH (h:Block {file: f.path}) WHERE h.deleted_at IS NULL AND NOT h.id IN f.ids
WITH collect(CASE WHEN h IS NOT NULL THEN [h.file, h.position, h.id] END) AS removed
"""

# File states last: a write before the block reads would put an eager barrier in front of them.
_SYNC_STATES = """
FOREACH (f IN $files |
  MERGE (x:File {path: f.path})
  SET x.mtime_ns = f.mtime_ns, x.size = f.size, x.sha256 = f.sha256)
RETURN removed, changed
"""

SYNC_FILES_WITHOUT_BLOCKS = _SYNC_REMOVED + "WITH removed, [] AS changed" + _SYNC_STATES

# A block row is written only when something stored differs; ``dirty`` is what the caller must
# re-evaluate: new, restored, or a different hash.
SYNC_FILES = (
    _SYNC_REMOVED
    + """
UNWIND $blocks AS r
OPTIONAL MATCH (b:Block {id: r.id})
WITH removed, r,
  (b IS NULL OR b.deleted_at IS NOT NULL OR b.hash <> r.hash) AS dirty,
  (b IS NULL OR b.deleted_at IS NOT NULL OR b.hash <> r.hash OR b.file <> r.file
    OR b.version <> r.version OR b.position <> r.position) AS differs
FOREACH (_ IN CASE WHEN differs THEN [1] ELSE [] END |
  MERGE (n:Block {id: r.id})
  SET n.anchor = r.anchor, n.file = r.file, n.text = r.text, n.hash = r.hash, n.version = r.version,
      n.position = r.position, n.updated_at = $now, n.deleted_at = null)
WITH removed, collect(CASE WHEN dirty THEN r.id END) AS changed
"""
    + _SYNC_STATES
)

# Blocks taken over by a block of another note (its note renamed or moved) get its key and
# file, keeping their edges; SYNC_FILES then finds them there. A new key the store already
# holds moves nothing.
MOVE_BLOCKS = """
UNWIND $moves AS m
MATCH (b:Block {id: m.source}) WHERE b.deleted_at IS NULL
OPTIONAL MATCH (x:Block {id: m.key})
WITH b, m, x WHERE x IS NULL
SET b.id = m.key, b.file = m.file
RETURN count(b) AS moved
"""

# The version change is written as SYNC_FILES writes one (with ``updated_at``); blocks of other
# files, deleted or unknown ones are left alone.
RECORD_WRITE = """
MERGE (x:File {path: $path})
SET x.mtime_ns = $mtime_ns, x.size = $size, x.sha256 = $sha256
WITH count(*) AS _
UNWIND $blocks AS r
MATCH (b:Block {id: r.id})
WHERE b.file = $path AND b.deleted_at IS NULL AND b.version <> r.version
SET b.version = r.version, b.updated_at = $now
"""

FORGET_FILES = """
MATCH (b:Block) WHERE b.file IN $paths AND b.deleted_at IS NULL
WITH collect([b.file, b.position, b.id]) AS live
OPTIONAL MATCH (f:File) WHERE f.path IN $paths
DELETE f
WITH live, count(*) AS _
RETURN live
"""

MARK_DELETED = """
MATCH (b:Block) WHERE b.id IN $ids AND b.deleted_at IS NULL
SET b.deleted_at = $now
RETURN count(b) AS marked
"""

GET_BLOCKS = f"MATCH (b:Block) WHERE b.id IN $ids RETURN {BLOCK_FIELDS}"

LIVE_BLOCKS_WITH_IDS = (
    f"MATCH (b:Block) WHERE b.anchor IN $ids AND b.deleted_at IS NULL "
    f"RETURN {BLOCK_FIELDS} ORDER BY b.id"
)

LIVE_BLOCKS = (
    f"MATCH (b:Block) WHERE b.deleted_at IS NULL RETURN {BLOCK_FIELDS} ORDER BY b.file, b.position"
)

BLOCKS_OF_FILE = (
    f"MATCH (b:Block {{file: $path}}) WHERE b.deleted_at IS NULL "
    f"RETURN {BLOCK_FIELDS} ORDER BY b.position"
)

# Per block: drop the edges of claims no longer listed, merge the listed ones (a kept edge keeps
# its scores), then, after the barrier, remove the dropped claims that originate from nothing.
REPLACE_CLAIMS = """
UNWIND $rows AS row
MATCH (b:Block {id: row.block_id})
OPTIONAL MATCH (old:Claim)-[e:ORIGINATES_FROM]->(b) WHERE NOT old.id IN row.claim_ids
DELETE e
WITH row, b, collect(old.id) AS dropped
FOREACH (c IN row.claims |
  MERGE (cl:Claim {id: c.id}) SET cl.text = c.text
  MERGE (cl)-[f:ORIGINATES_FROM]->(b) SET f.ordinal = c.ordinal)
WITH collect(row.block_id) AS found, reduce(acc = [], d IN collect(dropped) | acc + d) AS gone
OPTIONAL MATCH (cl:Claim) WHERE cl.id IN gone AND NOT (cl)-[:ORIGINATES_FROM]->()
OPTIONAL MATCH (cl)-[:OMITS]->(el:Element)
DETACH DELETE cl, el
WITH found, count(*) AS _
RETURN found
"""

_CLAIM_FIELDS = """
RETURN b.id AS block_id, b.file AS file, b.position AS position, c.id AS id, c.text AS text,
  properties(e) AS edge, el.text AS omitted_text, o.position AS omitted_position
"""

CLAIMS_OF_BLOCKS = (
    """
MATCH (c:Claim)-[e:ORIGINATES_FROM]->(b:Block) WHERE b.id IN $ids
OPTIONAL MATCH (c)-[o:OMITS]->(el:Element)
"""
    + _CLAIM_FIELDS
)

CLAIMS_NEEDING_EVALUATION = (
    f"""
MATCH (c:Claim)-[e:ORIGINATES_FROM]->(b:Block)
WHERE b.deleted_at IS NULL
  AND (e.evaluated_hash IS NULL OR e.evaluated_hash <> b.hash OR {_ANY_NULL})
OPTIONAL MATCH (c)-[o:OMITS]->(el:Element)
"""
    + _CLAIM_FIELDS
)

# The limit applies to edges, before the omitted elements multiply the rows. A null quality (an
# absent property) never compares below the threshold.
_LOW_QUALITY_EDGES = """
MATCH (c:Claim)-[e:ORIGINATES_FROM]->(b:Block)
WHERE b.deleted_at IS NULL AND e.quality < $threshold AND ($file IS NULL OR b.file = $file)
WITH c, e, b ORDER BY e.quality, c.id, b.id
"""
_OMITTED = """
OPTIONAL MATCH (c)-[o:OMITS]->(el:Element)
"""
LOW_QUALITY_CLAIMS = _LOW_QUALITY_EDGES + "LIMIT $limit" + _OMITTED + _CLAIM_FIELDS
LOW_QUALITY_CLAIMS_ALL = _LOW_QUALITY_EDGES + _OMITTED + _CLAIM_FIELDS

_FAILED_EDGES = f"""
MATCH (c:Claim)-[e:ORIGINATES_FROM]->(b:Block)
WHERE b.deleted_at IS NULL AND e.evaluated_hash IS NOT NULL AND ($file IS NULL OR b.file = $file)
  AND ({_ANY_NULL})
WITH c, e, b ORDER BY b.file, b.position, e.ordinal, c.id
"""
FAILED_CLAIMS = _FAILED_EDGES + "LIMIT $limit" + _OMITTED + _CLAIM_FIELDS
FAILED_CLAIMS_ALL = _FAILED_EDGES + _OMITTED + _CLAIM_FIELDS

# The weakest claim: every edge at the note's lowest quality comes back (usually one) and the
# caller breaks ties, rather than trusting the row order an aggregation sees.
NOTE_STATS = """
MATCH (b:Block) WHERE b.deleted_at IS NULL
OPTIONAL MATCH (c:Claim)-[e:ORIGINATES_FROM]->(b)
WITH b.file AS file, count(DISTINCT b.id) AS blocks, count(e) AS claims,
  count(e.quality) AS scored, avg(e.quality) AS mean_quality,
  max(e.evaluated_at) AS last_evaluated, min(e.quality) AS lowest,
  count(CASE WHEN e.quality < $threshold THEN 1 END) AS below,
  collect(CASE WHEN e.quality IS NOT NULL THEN [e.quality, c.id, b.id, c.text] END) AS scored_edges
RETURN file, blocks, claims, scored, mean_quality, last_evaluated, below,
  [x IN scored_edges WHERE x[0] = lowest] AS weakest
ORDER BY file
"""

SCORE_COUNTS = f"""
MATCH (:Claim)-[e:ORIGINATES_FROM]->(b:Block)
WHERE b.deleted_at IS NULL AND e.evaluated_hash IS NOT NULL
UNWIND [{", ".join(f"['{name}', e.{name}]" for name in SCORE_NAMES)}] AS pair
WITH pair[0] AS name, pair[1] AS value
WHERE value IS NOT NULL
RETURN name, round(value * 100) AS hundredths, count(*) AS edges
"""

DAILY_QUALITY = """
MATCH (:Claim)-[e:ORIGINATES_FROM]->(b:Block)
WHERE b.deleted_at IS NULL AND e.quality IS NOT NULL
RETURN substring(e.evaluated_at, 0, 10) AS day, avg(e.quality) AS mean_quality, count(*) AS edges
ORDER BY day
"""

# ``SET e += props`` with a null value removes the property: a failed score reads back as None.
WRITE_SCORES = """
UNWIND $rows AS r
MATCH (c:Claim {id: r.claim_id})-[e:ORIGINATES_FROM]->(b:Block {id: r.block_id})
WHERE b.hash = r.evaluated_hash
SET e += r.props
WITH c, r, e
OPTIONAL MATCH (c)-[:OMITS]->(stale:Element) WHERE NOT stale.text IN r.omitted
DETACH DELETE stale
WITH DISTINCT c, r, e
FOREACH (i IN range(0, size(r.omitted) - 1) |
  MERGE (el:Element {claim_id: c.id, text: r.omitted[i]})
  MERGE (c)-[o:OMITS]->(el) SET o.position = i)
RETURN count(e) AS written
"""

COUNTS = f"""
OPTIONAL MATCH (f:File) WITH count(f) AS files
OPTIONAL MATCH (b:Block) WITH files, count(b) AS all_blocks, count(b.deleted_at) AS deleted
OPTIONAL MATCH (s:Claim)-[e:ORIGINATES_FROM]->(sb:Block) WHERE sb.deleted_at IS NULL
RETURN files, all_blocks - deleted AS blocks, deleted, count(DISTINCT s.id) AS claims,
  count(DISTINCT CASE WHEN e.evaluated_hash IS NOT NULL AND NOT ({_ANY_NULL}) THEN s.id END)
    AS scored,
  count(DISTINCT CASE WHEN e.evaluated_hash IS NOT NULL AND ({_ANY_NULL}) THEN s.id END)
    AS null_scores,
  count(CASE WHEN e.quality < $threshold THEN 1 END) AS low_quality
"""
