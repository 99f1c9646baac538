package mixediceberg.flink;

import java.io.IOException;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.formats.common.TimestampFormat;
import org.apache.flink.formats.json.JsonRowDataDeserializationSchema;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.core.json.JsonReadFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.DeserializationFeature;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;

/**
 * One LogStore message into a row of the table's columns with its RowKind.
 *
 * <p>The layout (mixed_iceberg/logstore/format.py): bytes 0-3 the version {@code net\x01}, 4-7 the upstream id, 8-15
 * the epic (the ChangeStore commit sequence), 16 the flip flag, 17 the action (0 +I, 1 -U, 2 +U, 3 -D), then the row
 * as one JSON object: dates, times and timestamps as SQL strings ({@code 2024-01-02 03:04:05.000006}, a timestamptz
 * with a trailing Z), decimals as JSON numbers (read as BigDecimal: exact), a double's NaN and infinities as literals.
 * Flip markers (never written by mixed-iceberg; Amoro's writers may) carry no row and are skipped.
 */
public final class LogStoreDeserializationSchema implements DeserializationSchema<RowData> {
    private static final long serialVersionUID = 1L;
    private static final int HEADER = 18;
    private static final RowKind[] KINDS = {
        RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE
    };

    private final JsonRowDataDeserializationSchema rows;
    private final TypeInformation<RowData> produced;
    private transient ObjectMapper mapper;

    public LogStoreDeserializationSchema(RowType rowType, TypeInformation<RowData> produced) {
        this.rows = new JsonRowDataDeserializationSchema(rowType, produced, false, false, TimestampFormat.SQL);
        this.produced = produced;
    }

    @Override
    public void open(InitializationContext context) throws Exception {
        rows.open(context);
        mapper =
                new ObjectMapper()
                        .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS.mappedFeature())
                        .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS);
    }

    @Override
    public RowData deserialize(byte[] message) throws IOException {
        if (message == null) {
            return null;
        }
        if (message.length < HEADER
                || message[0] != 'n'
                || message[1] != 'e'
                || message[2] != 't'
                || message[3] != 1) {
            throw new IOException("LogStore message: expected the net\\x01 header of 18 bytes, found another message");
        }
        if (message[16] != 0) {
            return null; // a flip marker
        }
        int action = message[17];
        if (action < 0 || action >= KINDS.length) {
            throw new IOException("LogStore message: expected a change action 0-3, found " + action);
        }
        JsonNode node = mapper.readTree(message, HEADER, message.length - HEADER);
        RowData row = rows.convertToRowData(node);
        row.setRowKind(KINDS[action]);
        return row;
    }

    @Override
    public boolean isEndOfStream(RowData nextElement) {
        return false;
    }

    @Override
    public TypeInformation<RowData> getProducedType() {
        return produced;
    }
}
