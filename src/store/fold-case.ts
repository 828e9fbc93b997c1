/**
 * Case folding for `q` (the runs list's case-insensitive substring match), the same in every backend and
 * on both sides of the match. Unicode-aware, unlike SQL's ASCII-only lower(): NFKC first (so "ﬁ" is
 * "fi" and full-width letters are ASCII), then upper- and lower-casing, which folds the characters whose
 * upper case is longer (ß → SS → ss), and last the final sigma, which lower-casing keeps at a word's end.
 * Deterministic: SQLite may call it once per row and cache nothing else.
 */
export function foldCase(text: string): string {
  return text.normalize("NFKC").toUpperCase().toLowerCase().replaceAll("ς", "σ");
}
