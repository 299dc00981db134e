/**
 * {@code paxoscp experiment}: the paper's section 6 evaluation (Figures 4 to 8) on a local
 * cluster, every commit mode on the same seeds, written as CSV, manifest and charts.
 */
package org.paxoscp.experiment;
