/**
 * What a log position holds and how it is written: {@link org.paxoscp.wal.LogEntry} (one
 * transaction's read set and writes), {@link org.paxoscp.wal.LogValue} (the entries chosen at a
 * position, or a no-op), {@link org.paxoscp.wal.Mutation}, and their versioned binary encoding
 * ({@link org.paxoscp.wal.LogCodec}), which refuses malformed input with
 * {@link org.paxoscp.wal.CorruptDataException}.
 */
package org.paxoscp.wal;
