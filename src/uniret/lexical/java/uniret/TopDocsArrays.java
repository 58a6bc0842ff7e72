package uniret;

import org.apache.lucene.search.ScoreDoc;
import org.apache.lucene.search.TopDocs;

/**
 * A Lucene TopDocs as two primitive arrays, read from Python in one JNI call each.
 *
 * <p>pyjnius pays a JNI round trip per Java field access, so reading 1,000 ScoreDoc objects from
 * Python costs milliseconds; Anserini's ScoredDocs.fromTopDocs avoids that but loads every hit's
 * stored document (about 5 microseconds each). uniret maps Lucene doc ids to its own ids by a
 * table, so it needs neither.
 */
public final class TopDocsArrays {
    /** Lucene doc ids, in the TopDocs' order. */
    public final int[] docs;
    /** Scores, in the same order. */
    public final float[] scores;

    /** Hits already read into arrays (IdOrder's reordering). */
    TopDocsArrays(int[] docs, float[] scores) {
        this.docs = docs;
        this.scores = scores;
    }

    public TopDocsArrays(TopDocs top) {
        ScoreDoc[] hits = top.scoreDocs;
        docs = new int[hits.length];
        scores = new float[hits.length];
        for (int i = 0; i < hits.length; i++) {
            docs[i] = hits[i].doc;
            scores[i] = hits[i].score;
        }
    }

    /**
     * The score-tie handling of Anserini's SimpleSearcher (its ScoreTiesAdjusterReranker), in
     * place and in float arithmetic as Anserini does it: each score rounded to 4 decimals, and a
     * score within 1e-4 of the (adjusted) one ranked above it lowered by 1e-6 per tie in the run.
     */
    public TopDocsArrays adjustTies() {
        int tie = 0;
        for (int i = 0; i < scores.length; i++) {
            scores[i] = (float) (Math.round((double) scores[i] * 10000.0) / 10000.0);
            if (i == 0 || scores[i - 1] - scores[i] > 1e-4f) {
                tie = 0;
            } else {
                tie++;
                scores[i] -= 1e-6f * tie;
            }
        }
        return this;
    }
}
