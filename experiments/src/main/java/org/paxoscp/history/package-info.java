/**
 * History export: client histories and DC logs as JSON lines (the format in docs/guarantees.md,
 * "History export"), read back for {@code paxoscp check}.
 */
package org.paxoscp.history;
