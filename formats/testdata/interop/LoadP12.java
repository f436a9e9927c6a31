import java.io.FileInputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.security.KeyStore;
import java.security.PrivateKey;
import java.security.cert.Certificate;
import java.util.Collections;

// LoadP12 opens a PKCS#12 file as a Java KeyStore and reads its private key
// and certificate chain, as a Java TLS client or server would.
//
//	java LoadP12.java FILE.p12 PASSWORD-FILE
//
// It prints "key ALGORITHM chain LENGTH" for the one key entry and exits 1
// if there is not exactly one.
public class LoadP12 {
    public static void main(String[] args) throws Exception {
        String pw = new String(Files.readAllBytes(Paths.get(args[1])), StandardCharsets.US_ASCII).trim();
        char[] password = pw.toCharArray();
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (FileInputStream in = new FileInputStream(args[0])) {
            ks.load(in, password);
        }
        int keys = 0;
        for (String alias : Collections.list(ks.aliases())) {
            if (!ks.isKeyEntry(alias)) {
                continue;
            }
            PrivateKey key = (PrivateKey) ks.getKey(alias, password);
            Certificate[] chain = ks.getCertificateChain(alias);
            System.out.println("key " + key.getAlgorithm() + " chain " + (chain == null ? 0 : chain.length));
            keys++;
        }
        if (keys != 1) {
            System.err.println("found " + keys + " key entries, want 1");
            System.exit(1);
        }
    }
}
