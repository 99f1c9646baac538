package mixediceberg.flink;

import java.util.Arrays;
import org.apache.flink.api.common.serialization.SerializationSchema;
import org.apache.flink.formats.common.TimestampFormat;
import org.apache.flink.formats.json.JsonFormatOptions;
import org.apache.flink.formats.json.JsonRowDataSerializationSchema;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;

/**
 * One changelog row as {@code {"op": "<RowKind short string>", "data": {<the row>}}}, written by Flink's own JSON
 * serializer (flink-json) for an envelope row of the two fields: temporal values in ISO-8601 (a TIMESTAMP_LTZ
 * with a trailing Z), decimals as plain numbers, bytes as base64, nulls kept.
 */
public final class ChangelogJsonSerializationSchema implements SerializationSchema<RowData> {
    private static final long serialVersionUID = 1L;

    private final JsonRowDataSerializationSchema envelope;
    private transient GenericRowData reuse;

    public ChangelogJsonSerializationSchema(RowType data) {
        RowType envelopeType =
                new RowType(
                        false,
                        Arrays.asList(
                                new RowType.RowField("op", new VarCharType(false, 2)),
                                new RowType.RowField("data", data)));
        this.envelope =
                new JsonRowDataSerializationSchema(
                        envelopeType,
                        TimestampFormat.ISO_8601,
                        JsonFormatOptions.MapNullKeyMode.FAIL,
                        "null",
                        true,
                        false);
    }

    @Override
    public void open(InitializationContext context) throws Exception {
        envelope.open(context);
        reuse = new GenericRowData(2);
    }

    @Override
    public byte[] serialize(RowData row) {
        reuse.setField(0, StringData.fromString(row.getRowKind().shortString()));
        reuse.setField(1, row);
        return envelope.serialize(reuse);
    }
}
