package org.paxoscp.ycsb;

import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.FileSystems;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Properties;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import site.ycsb.DBException;

/** The binding reads its cluster file as every reader does: not when others may read the key. */
@Timeout(30)
class PaxosCpDBConfigTest {

  @Test
  void aClusterFileOthersMayReadIsRefusedNamingTheFix(@TempDir Path dir) throws Exception {
    Assumptions.assumeTrue(FileSystems.getDefault().supportedFileAttributeViews()
        .contains("posix"), "modes exist on POSIX file systems only");
    Path file = dir.resolve("cluster.properties");
    Files.write(file, List.of("paxoscp.dcs=V1", "paxoscp.key=00112233445566778899aabbccddeeff",
        "paxoscp.dc.V1.endpoints=127.0.0.1:1"), StandardCharsets.UTF_8);
    Files.setPosixFilePermissions(file, PosixFilePermissions.fromString("rw-r--r--"));
    Properties p = new Properties();
    p.setProperty(PaxosCpDB.CONFIG, file.toString());
    PaxosCpDB db = new PaxosCpDB();
    db.setProperties(p);
    DBException e = assertThrows(DBException.class, db::init);
    assertTrue(e.getMessage().contains("chmod 600 " + file), e.getMessage());
  }
}
