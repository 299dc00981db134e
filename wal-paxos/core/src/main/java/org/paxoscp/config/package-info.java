/**
 * The typed configuration model: every setting of the cluster, the service, the HBase store and
 * the proposer is a {@link org.paxoscp.config.ConfigKey} (name, type, default, validation,
 * one-line description) read by one parser; each component lists its keys in a
 * {@link org.paxoscp.config.ConfigKeys}, from which docs/configuration.md is
 * generated.
 */
package org.paxoscp.config;
