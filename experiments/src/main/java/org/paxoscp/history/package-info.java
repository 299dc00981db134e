/**
 * History export: client histories and DC logs as JSON lines (the format in the README's
 * "History export"), read back for {@code paxoscp check}.
 */
package org.paxoscp.history;
