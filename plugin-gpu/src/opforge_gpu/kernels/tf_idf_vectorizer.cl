// TfIdfVectorizer (semantics in opforge/opset/tf_idf_vectorizer.py): one work-item per (row,
// output column) counts the n-grams of that column at every start and skip distance (1-grams at
// distance 1 only), then weights the count. No atomics: a column's n-grams are listed together.
// P: rows cols size skips min_gram mode has_weights, col_start[size + 1], then (length, offset
// into `items`) per n-gram.
__kernel void tf_idf_vectorizer(__global const X_T* x, __global const long* items, __global const float* w,
                                __global Y_T* y, __global const int* P) {
    const int gid = get_global_id(0);
    const int rows = P[0], cols = P[1], size = P[2], skips = P[3], min_gram = P[4], mode = P[5];
    if (gid >= rows * size) return;
    const int r = gid / size, c = gid % size;
    __global const int* col_start = P + 7;
    __global const int* grams = P + 8 + size;
    __global const X_T* row = x + (long)r * cols;
    long count = 0;
    for (int e = col_start[c]; e < col_start[c + 1]; ++e) {
        const int n = grams[2 * e], off = grams[2 * e + 1];
        for (int d = 1; d <= skips + 1; ++d) {
            if (n < max(min_gram, d == 1 ? 1 : 2)) continue;
            for (int s = 0; s + (n - 1) * d < cols; ++s) {
                int k = 0;
                while (k < n && (long)row[s + k * d] == items[off + k]) ++k;
                if (k == n) ++count;
            }
        }
    }
    const float wc = P[6] ? w[c] : 1.0f;
    const float f = (float)count;
    const float v = mode == 0 ? f : mode == 1 ? (count > 0 ? wc : 0.0f) : wc * f;
    STORE_Y(y, gid, v);
}
