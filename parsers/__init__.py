"""Pure text: the one grammar of ``aclarai:`` comments, Tier 1 blocks and their hashes, score
comment rewriting and sentence splitting. No files, no network, nothing of ours imported."""

from aclarai.parsers.about import block_about, note_title
from aclarai.parsers.adopt import Adopted, adopt_note, unmarked_paragraphs
from aclarai.parsers.blocks import NoteLayout, decode_note, parse_note, scan_note
from aclarai.parsers.dashboard import (
    ClaimRef,
    DailyQuality,
    DashboardData,
    DeadLetter,
    NoteStats,
    render_dashboard,
    same_dashboard,
    shown_threshold,
)
from aclarai.parsers.errors import (
    AclaraiError,
    BrokerUnavailable,
    ConfigError,
    EvaluationError,
    EvaluatorUnavailable,
    InputTooLong,
    ParseError,
    PayloadError,
    QueueError,
    StoreError,
    StoreUnavailable,
    TransientError,
    UnparseableOutput,
    VaultBusy,
    WriteConflict,
)
from aclarai.parsers.grammar import (
    AclaraiComment,
    CommentKind,
    format_id_comment,
    format_score_comment,
    parse_anchor,
    scan_line,
)
from aclarai.parsers.hashing import content_hash, normalize_text
from aclarai.parsers.marks import Unadopted, drop_emptied, unadopt_note
from aclarai.parsers.model import (
    SCORE_NAMES,
    SCORE_WORDS,
    Block,
    ParsedNote,
    Problem,
    ProblemKind,
    named_scores,
)
from aclarai.parsers.reading import LineKind, line_kinds, prose_text, reader_text
from aclarai.parsers.rewrite import RewriteResult, apply_scores
from aclarai.parsers.sentences import split_for_nli, split_sentences
from aclarai.parsers.timestamps import format_utc, utc_now

__all__ = [
    "SCORE_NAMES",
    "SCORE_WORDS",
    "AclaraiComment",
    "AclaraiError",
    "Adopted",
    "Block",
    "BrokerUnavailable",
    "ClaimRef",
    "CommentKind",
    "ConfigError",
    "DailyQuality",
    "DashboardData",
    "DeadLetter",
    "EvaluationError",
    "EvaluatorUnavailable",
    "InputTooLong",
    "LineKind",
    "NoteLayout",
    "NoteStats",
    "ParseError",
    "ParsedNote",
    "PayloadError",
    "Problem",
    "ProblemKind",
    "QueueError",
    "RewriteResult",
    "StoreError",
    "StoreUnavailable",
    "TransientError",
    "Unadopted",
    "UnparseableOutput",
    "VaultBusy",
    "WriteConflict",
    "adopt_note",
    "apply_scores",
    "block_about",
    "content_hash",
    "decode_note",
    "drop_emptied",
    "format_id_comment",
    "format_score_comment",
    "format_utc",
    "line_kinds",
    "named_scores",
    "normalize_text",
    "note_title",
    "parse_anchor",
    "parse_note",
    "prose_text",
    "reader_text",
    "render_dashboard",
    "same_dashboard",
    "scan_line",
    "scan_note",
    "shown_threshold",
    "split_for_nli",
    "split_sentences",
    "unadopt_note",
    "unmarked_paragraphs",
    "utc_now",
]
