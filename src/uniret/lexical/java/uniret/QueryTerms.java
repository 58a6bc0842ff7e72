package uniret;

import java.io.IOException;
import java.io.StringReader;
import java.io.UncheckedIOException;
import org.apache.lucene.analysis.Analyzer;
import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.tokenattributes.CharTermAttribute;

/**
 * A query's analysed terms as one string, read from Python in one JNI call.
 *
 * <p>Anserini's AnalyzerUtils.analyze returns a Java list, and pyjnius pays a JNI round trip per
 * element read from it. Lucene's API only: Anserini's classes need a newer javac than images carry.
 */
public final class QueryTerms {
    private QueryTerms() {}

    /** The non-empty terms `analyzer` makes of `text`, in order, joined by '\n' (never inside a term). */
    public static String analyze(Analyzer analyzer, String text) {
        StringBuilder out = new StringBuilder();
        try (TokenStream stream = analyzer.tokenStream(null, new StringReader(text))) {
            CharTermAttribute term = stream.addAttribute(CharTermAttribute.class);
            stream.reset();
            while (stream.incrementToken()) {
                if (term.length() == 0) {
                    continue;
                }
                if (out.length() > 0) {
                    out.append('\n');
                }
                out.append(term.buffer(), 0, term.length());
            }
            stream.end();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toString();
    }
}
