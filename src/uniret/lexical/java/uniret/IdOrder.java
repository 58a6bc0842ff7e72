package uniret;

import java.util.Arrays;
import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;

/**
 * Anserini's hit order (score descending, ties by stored id ascending) applied to hits that Lucene
 * collected by score alone.
 *
 * <p>A search sorted on (score, id) runs Lucene's field collector, which on top-1000 lists costs
 * about 2.6x the plain top-k collector. Collecting a few more hits than asked by score and ordering
 * them here gives the same list, as long as the collected hits hold every document tied with the
 * k-th: {@link #top} checks that and returns null otherwise, so the caller can search sorted.
 */
public final class IdOrder {
    private final int[] rank;
    private final int[] docOfRank;

    /**
     * @param rank the rank of each Lucene doc's stored id in byte (code point) order
     * @param docOfRank its inverse: the Lucene doc of each rank
     */
    public IdOrder(int[] rank, int[] docOfRank) {
        this.rank = rank;
        this.docOfRank = docOfRank;
    }

    /**
     * The first k hits of {@code collected} (the top {@code requested} by score) in Anserini's
     * order, or null when a document tied with the k-th may not have been collected.
     */
    public TopDocsArrays top(TopDocs collected, int requested, int k) {
        ScoreDoc[] hits = collected.scoreDocs;
        int n = hits.length;
        long[] keys = new long[n];
        for (int i = 0; i < n; i++) {
            float score = hits[i].score;
            if (!(score >= 0f)) {
                return null; // bit patterns order like the floats only for non-negative scores
            }
            // descending score first (inverted bits), then ascending id rank
            keys[i] = ((0x7fffffffL - Float.floatToIntBits(score)) << 32) | rank[hits[i].doc];
        }
        Arrays.sort(keys);
        int m = Math.min(k, n);
        // the collector was full and its lowest score ties the k-th: an equal score past it could
        // belong to a document whose id sorts earlier
        if (n >= requested && m > 0 && hits[n - 1].score == scoreOf(keys[m - 1])) {
            return null;
        }
        int[] docs = new int[m];
        float[] scores = new float[m];
        for (int i = 0; i < m; i++) {
            docs[i] = docOfRank[(int) (keys[i] & 0xffffffffL)];
            scores[i] = scoreOf(keys[i]);
        }
        return new TopDocsArrays(docs, scores);
    }

    private static float scoreOf(long key) {
        return Float.intBitsToFloat((int) (0x7fffffffL - (key >>> 32)));
    }
}
